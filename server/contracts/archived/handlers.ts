/**
 * The management and grade handlers both archived contracts serve, written once as functions of one
 * version's JSON shapes. They are typed by what they read and return, not by an operation: each
 * version's index attaches the guards with its own generated operation types and checks the whole table
 * with `satisfies`, so a shape that does not match that version's spec still fails to compile there.
 */
import type { HandlerContext } from '../../http/registry.js';
import type { Services } from '../../http/services.js';
import type { AppRecord, LaunchGradeRecord, LocationRecord } from '../../store/index.js';
import { submitGrade } from './grades.js';
import { storedLocations } from '../../placements/stored-order.js';
import { createLocation, deleteLocation, updateApp, updateLocation } from './management.js';
import type { ArchivedVersion } from './version.js';
import { callingApp } from './version.js';

/** What these handlers read of a request: any operation's handler context has it. */
type ArchivedRequest = Pick<HandlerContext<unknown>, 'services' | 'principal' | 'log'> & { body: unknown };
type Guarded<G> = ArchivedRequest & { guarded: G };

/** One archived version's JSON of the app, a stored location and a launch grade. */
export interface ArchivedShapes<App, Location, Grade> {
  version: ArchivedVersion;
  app: (services: Services, app: AppRecord) => Promise<App>;
  location: (location: LocationRecord) => Location;
  grade: (grade: LaunchGradeRecord) => Grade;
}

export function archivedHandlers<App, Location, Grade>(shapes: ArchivedShapes<App, Location, Grade>) {
  const { version } = shapes;
  return {
    /** Ready to serve: these operations have no guard. */
    unguarded: {
      getApp: async (ctx: ArchivedRequest) => ({ status: 200 as const, body: await shapes.app(ctx.services, callingApp(ctx.principal)) }),
      updateApp: async (ctx: ArchivedRequest) => {
        const app = await updateApp(ctx.services, callingApp(ctx.principal), ctx.body, version);
        return { status: 200 as const, body: await shapes.app(ctx.services, app) };
      },
      listLocations: async (ctx: ArchivedRequest) => {
        const locations = await storedLocations(ctx.services, callingApp(ctx.principal).id, version);
        return { status: 200 as const, body: { locations: locations.map(shapes.location) } };
      },
      createLocation: async (ctx: ArchivedRequest) => ({
        status: 201 as const,
        body: shapes.location(await createLocation(ctx.services, callingApp(ctx.principal), ctx.body, version)),
      }),
      submitGrade: async (ctx: ArchivedRequest) => ({
        status: 200 as const,
        body: shapes.grade(await submitGrade({ services: ctx.services, log: ctx.log }, callingApp(ctx.principal), ctx.body, version)),
      }),
    },
    /**
     * For `withGuard` with the version's operation type and `storedLocationGuard` or `gradeGuard`, so
     * another tool's location or grade is a 404 before the body is read. A table that leaves one out
     * misses an operation and does not compile.
     */
    guarded: {
      updateLocation: async (ctx: Guarded<LocationRecord>) => ({
        status: 200 as const,
        body: shapes.location(await updateLocation(ctx.services, callingApp(ctx.principal), ctx.guarded, ctx.body, version)),
      }),
      deleteLocation: async (ctx: Guarded<LocationRecord>) => ({
        status: 200 as const,
        body: await deleteLocation(ctx.services, callingApp(ctx.principal), ctx.guarded),
      }),
      getGrade: async (ctx: Guarded<LaunchGradeRecord>) => ({ status: 200 as const, body: shapes.grade(ctx.guarded) }),
    },
  };
}
