/**
 * The baseline of `npm run bench`: Express 5 with the same four routes as the service and nothing else
 * (no credential, no validation, no store, no logs): rows in a Map, a JSON body parser, and an answer of
 * the same shape. What the service costs beyond this is what its validation, auth, SQLite and
 * publication add. Run as its own process (`PORT` from the environment) so it gets a core of its own,
 * like the service does.
 */
import { randomUUID } from 'node:crypto';
import express from 'express';
import type { Request, Response } from 'express';

const rows = new Map<string, Record<string, unknown>>();
const app = express();
app.disable('x-powered-by');
app.set('etag', false);
app.use(express.json({ limit: '2mb' }));

const memberRow = '/v1/contexts/:contextId/apps/:appId/members/:memberId/storage';
const keyOf = (req: Request): string => `${String(req.params['contextId'])}/${String(req.params['appId'])}/${String(req.params['memberId'])}`;

app.get(memberRow, (req: Request, res: Response) => {
  res.json(rows.get(keyOf(req)) ?? {});
});

app.put(memberRow, (req: Request, res: Response) => {
  rows.set(keyOf(req), req.body as Record<string, unknown>);
  res.status(204).end();
});

// Top-level add/replace/remove only: the minimum that makes the bench's one-key patch do its work.
app.patch(memberRow, (req: Request, res: Response) => {
  const row = { ...(rows.get(keyOf(req)) ?? {}) };
  for (const op of (req.body as { patch: Array<{ op: string; path: string; value?: unknown }> }).patch) {
    const key = op.path.slice(1);
    if (op.op === 'remove') delete row[key];
    else row[key] = op.value;
  }
  rows.set(keyOf(req), row);
  res.status(204).end();
});

app.post('/v1/contexts/:contextId/apps/:appId/locations/:locationId/members/:memberId/scores', (req: Request, res: Response) => {
  const body = req.body as { score: number; comment?: string };
  res.json({
    id: `att_${randomUUID()}`,
    status: 'success',
    score: body.score,
    max_score: null,
    activity_progress: 'Completed',
    grading_progress: 'FullyGraded',
    submitted: new Date().toISOString(),
    member: req.params['memberId'],
    location: req.params['locationId'],
    app: req.params['appId'],
    context: req.params['contextId'],
    data: { comment: body.comment ?? '', response: { status: 204, body: '' }, error: '', source_type: 'session', source_id: '' },
  });
});

app.get('/healthz', (_req: Request, res: Response) => {
  res.json({ status: 'ok' });
});

const port = Number(process.env['PORT'] ?? 0);
const server = app.listen(port, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`bare baseline listening on http://127.0.0.1:${typeof address === 'object' && address ? address.port : port}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
