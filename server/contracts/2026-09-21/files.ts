/**
 * Files kept beside the four rows (list, read, ask to store, delete), the upload target the signed forms
 * post to, and signed downloads (decisions L-02, L-05). File rules are the row's rules: the same guard
 * answers 404 and 403; then the key and the body (422), then the level's provisioning (422), in the
 * order of decision GAP-23. The work itself is `services.files` (server/files).
 */
import { pipeline } from 'node:stream/promises';
import type { operations } from '../../../generated/2026-09-21/types.js';
import type { RowGuardResult } from '../../auth/permissions.js';
import { rowGuard } from '../../auth/permissions.js';
import { CLOSE_CONNECTION, checkFileKey, downloadHeaders, FilesError, parseUploadRequest } from '../../files/index.js';
import type { FileDetail, FileSummary, UploadFormAnswer } from '../../files/index.js';
import { Problem } from '../../http/problem.js';
import type { Handlers, HandlerContext } from '../../http/registry.js';
import { withGuard } from '../../http/registry.js';
import type { Services } from '../../http/services.js';
import { requireProvisioned } from './rows.js';

type FileOperationId =
  | 'listContextFiles'
  | 'getContextFile'
  | 'putContextFile'
  | 'deleteContextFile'
  | 'listLocationFiles'
  | 'getLocationFile'
  | 'putLocationFile'
  | 'deleteLocationFile'
  | 'listMemberFiles'
  | 'getMemberFile'
  | 'putMemberFile'
  | 'deleteMemberFile'
  | 'listMemberLocationFiles'
  | 'getMemberLocationFile'
  | 'putMemberLocationFile'
  | 'deleteMemberLocationFile'
  | 'uploadFile'
  | 'downloadFile';

interface FilesRequest {
  services: Services;
  guarded: RowGuardResult;
}

/** The files layer speaks `FilesError`; the API answers `Problem`. */
function toProblem(err: unknown): unknown {
  if (!(err instanceof FilesError)) return err;
  const closing = (err as unknown as Record<symbol, unknown>)[CLOSE_CONNECTION] === true;
  return new Problem(err.status, err.code, err.detail, closing ? { headers: { Connection: 'close' } } : {});
}

async function files<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    throw toProblem(err);
  }
}

function listFiles({ services, guarded }: FilesRequest): Promise<FileSummary[]> {
  return files(async () => {
    await requireProvisioned(services.store, guarded.key);
    return services.files.list(guarded.key);
  });
}

function readFile({ services, guarded }: FilesRequest, key: string): Promise<FileDetail> {
  return files(async () => {
    checkFileKey(key);
    await requireProvisioned(services.store, guarded.key);
    return services.files.read(guarded.key, key);
  });
}

function askToStore({ services, guarded }: FilesRequest, key: string, body: unknown): Promise<UploadFormAnswer> {
  return files(async () => {
    checkFileKey(key);
    const request = parseUploadRequest(body);
    await requireProvisioned(services.store, guarded.key);
    return services.files.requestUpload(guarded.key, key, request);
  });
}

function deleteFile({ services, guarded }: FilesRequest, key: string): Promise<void> {
  return files(async () => {
    checkFileKey(key);
    await requireProvisioned(services.store, guarded.key);
    await services.files.delete(guarded.key, key);
  });
}

type Ops = operations;

async function upload(ctx: HandlerContext<Ops['uploadFile']>): Promise<void> {
  try {
    await ctx.services.files.receive(ctx.req);
  } catch (err) {
    const problem = toProblem(err);
    if (problem instanceof Problem && problem.headers['Connection'] === 'close') {
      // The rest of an oversized body is not read: close once the answer is out.
      ctx.res.once('finish', () => ctx.req.socket.destroy());
    }
    throw problem;
  }
}

async function download(ctx: HandlerContext<Ops['downloadFile']>): Promise<void> {
  const opened = await files(() => ctx.services.files.openDownload(ctx.params.download_token));
  for (const [name, value] of Object.entries(downloadHeaders(opened.file, opened.size, opened.remainingMs))) ctx.res.setHeader(name, value);
  ctx.res.status(200);
  try {
    await pipeline(opened.stream, ctx.res);
  } catch (err) {
    // The client went away mid-download; nothing is left to answer.
    ctx.log.debug('download ended early', { err });
  }
}

export const fileHandlers: Pick<Handlers<Ops>, FileOperationId> = {
  listContextFiles: withGuard(rowGuard<Ops['listContextFiles']>('context'), async (ctx) => ({
    status: 200,
    body: await listFiles(ctx),
  })),
  getContextFile: withGuard(rowGuard<Ops['getContextFile']>('context'), async (ctx) => ({
    status: 200,
    body: await readFile(ctx, ctx.params.key),
  })),
  putContextFile: withGuard(rowGuard<Ops['putContextFile']>('context'), async (ctx) => ({
    status: 200,
    body: await askToStore(ctx, ctx.params.key, ctx.body),
  })),
  deleteContextFile: withGuard(rowGuard<Ops['deleteContextFile']>('context'), async (ctx) => {
    await deleteFile(ctx, ctx.params.key);
    return { status: 204 };
  }),

  listLocationFiles: withGuard(rowGuard<Ops['listLocationFiles']>('location'), async (ctx) => ({
    status: 200,
    body: await listFiles(ctx),
  })),
  getLocationFile: withGuard(rowGuard<Ops['getLocationFile']>('location'), async (ctx) => ({
    status: 200,
    body: await readFile(ctx, ctx.params.key),
  })),
  putLocationFile: withGuard(rowGuard<Ops['putLocationFile']>('location'), async (ctx) => ({
    status: 200,
    body: await askToStore(ctx, ctx.params.key, ctx.body),
  })),
  deleteLocationFile: withGuard(rowGuard<Ops['deleteLocationFile']>('location'), async (ctx) => {
    await deleteFile(ctx, ctx.params.key);
    return { status: 204 };
  }),

  listMemberFiles: withGuard(rowGuard<Ops['listMemberFiles']>('member'), async (ctx) => ({
    status: 200,
    body: await listFiles(ctx),
  })),
  getMemberFile: withGuard(rowGuard<Ops['getMemberFile']>('member'), async (ctx) => ({
    status: 200,
    body: await readFile(ctx, ctx.params.key),
  })),
  putMemberFile: withGuard(rowGuard<Ops['putMemberFile']>('member'), async (ctx) => ({
    status: 200,
    body: await askToStore(ctx, ctx.params.key, ctx.body),
  })),
  deleteMemberFile: withGuard(rowGuard<Ops['deleteMemberFile']>('member'), async (ctx) => {
    await deleteFile(ctx, ctx.params.key);
    return { status: 204 };
  }),

  listMemberLocationFiles: withGuard(rowGuard<Ops['listMemberLocationFiles']>('member_location'), async (ctx) => ({
    status: 200,
    body: await listFiles(ctx),
  })),
  getMemberLocationFile: withGuard(rowGuard<Ops['getMemberLocationFile']>('member_location'), async (ctx) => ({
    status: 200,
    body: await readFile(ctx, ctx.params.key),
  })),
  putMemberLocationFile: withGuard(rowGuard<Ops['putMemberLocationFile']>('member_location'), async (ctx) => ({
    status: 200,
    body: await askToStore(ctx, ctx.params.key, ctx.body),
  })),
  deleteMemberLocationFile: withGuard(rowGuard<Ops['deleteMemberLocationFile']>('member_location'), async (ctx) => {
    await deleteFile(ctx, ctx.params.key);
    return { status: 204 };
  }),

  uploadFile: async (ctx) => {
    await upload(ctx);
    return { status: 204 };
  },
  downloadFile: async (ctx) => {
    await download(ctx);
    return { stream: true };
  },
};
