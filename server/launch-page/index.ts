/** The launch page: tickets, the `GET /launch/{ticket}` handler and its mount. */
export * from './handler.js';
export * from './launch.js';
export * from './mount.js';
export * from './pages.js';
export * from './tickets.js';
