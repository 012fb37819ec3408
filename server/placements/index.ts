/**
 * The picker, placements and provisioning: the service functions the dashboard's Sandbox operations
 * (and any future LMS-facing placement flow) are built on. They speak in records and refusals
 * (`PlacementError`, with the status and code a handler should answer), never in HTTP.
 */
export * from './availability.js';
export * from './errors.js';
export * from './picker.js';
export * from './place.js';
export * from './provision.js';
