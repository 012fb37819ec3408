// The files kept beside a row (decision L-02), through the `files` URL a launch gave. An upload is
// two calls that the helper makes as one: the ask-to-store PUT, which answers a signed form, and
// the multipart POST of that form with the bytes last (decisions GAP-02, GAP-05, L-05). The bytes
// go straight to the upload target and are streamed, never held whole, when their size is known.

import type { Readable } from 'node:stream';
import { schemas } from '../../generated/2026-09-21/schemas.js';
import type { components } from '../../generated/2026-09-21/types.js';
import { fillMessage } from '../../rules/messages.js';
import { readProblem } from '../problem.js';
import {
  callJson,
  JSON_ACCEPT,
  requireToken,
  requireUrl,
  type ToolRequestOptions,
  type ToolResult,
} from './http.js';

export type FileSummary = components['schemas']['FileSummary'];
export type FileList = components['schemas']['FileList'];
export type FileDetail = components['schemas']['FileDetail'];
export type UploadForm = components['schemas']['UploadForm'];

/** 25 MB in binary units (decisions GAP-04, GAP-06). */
export const MAX_FILE_SIZE = schemas.FileUploadRequest.properties.size.maximum;

/** The contract's key rule (decisions GAP-03, GAP-36). */
export const FILE_KEY_PATTERN = new RegExp(schemas.FileKey.pattern);
export const FILE_KEY_MESSAGE =
  "invalid file key: 1 to 128 characters of letters, digits, '.', '_' or '-', starting with a letter or digit";

/** What `upload` accepts: bytes in memory, a Blob (a file opened with `fs.openAsBlob` too), or a stream. */
export type UploadData = Uint8Array | ArrayBuffer | Blob | ReadableStream<Uint8Array> | Readable | AsyncIterable<Uint8Array | string>;

export interface UploadOptions {
  /**
   * The exact number of bytes. Needed to stream a stream: without it the helper reads the stream
   * into memory first (up to 25 MB) to learn its size. For bytes and Blobs it is their own size.
   */
  size?: number;
  /**
   * Media type downloads are served with. Omitted: a Blob's own `type`, else the service guesses it
   * from the filename or key.
   */
  mimetype?: string;
  /** Name a download is saved as. Omitted: a File's own `name`, else the key. */
  filename?: string;
  /** `true`: downloads save the file instead of showing it. */
  attachment?: boolean;
}

export interface Uploaded {
  key: string;
  size: number;
}

export interface FilesClient {
  /** The files URL, exactly as given. */
  readonly url: string;
  /** The row's stored files, sorted by key. */
  list(): Promise<ToolResult<FileList>>;
  /** One file with a signed download URL valid until `expires`; 404 when no file has the key. */
  read(key: string): Promise<ToolResult<FileDetail>>;
  /** Deletes the file (204, also when there was none). */
  delete(key: string): Promise<ToolResult<undefined>>;
  /**
   * Stores `data` under `key`, replacing any file there: asks for a signed form, then posts the
   * bytes with it. `error` is the refusal of whichever step refused (quota and size on the PUT,
   * signature and size mismatch on the POST).
   */
  upload(key: string, data: UploadData, options?: UploadOptions): Promise<ToolResult<Uploaded>>;
}

function fileUrl(filesUrl: string, key: string): string {
  // A key outside the rule could also change the URL's meaning ("..", "?", "#"), so it never
  // reaches the wire: calling with one is a bug in the tool, not a refusal to report.
  if (typeof key !== 'string' || !FILE_KEY_PATTERN.test(key)) throw new RangeError(FILE_KEY_MESSAGE);
  return `${filesUrl}/${key}`;
}

// ---------------------------------------------------------------------------------------------
// The multipart body

const encoder = new TextEncoder();

/** Escapes a name or filename the way browsers do in multipart/form-data (WHATWG HTML). */
function quoteParam(value: string): string {
  return value.replace(/"/g, '%22').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
}

function boundary(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(18));
  return `----tis-kit-${Buffer.from(bytes).toString('base64url')}`;
}

interface MultipartFrame {
  contentType: string;
  head: Uint8Array<ArrayBuffer>;
  tail: Uint8Array<ArrayBuffer>;
}

/** Every entry of `fields`, in the order given, then the head of the `file` part; the bytes go between head and tail. */
function frame(fields: Record<string, string>, filename: string, mimetype: string | undefined): MultipartFrame {
  const mark = boundary();
  let head = '';
  for (const [name, value] of Object.entries(fields)) {
    head += `--${mark}\r\nContent-Disposition: form-data; name="${quoteParam(name)}"\r\n\r\n${String(value)}\r\n`;
  }
  head +=
    `--${mark}\r\nContent-Disposition: form-data; name="file"; filename="${quoteParam(filename)}"\r\n` +
    `Content-Type: ${mimetype && !/[\r\n]/.test(mimetype) ? mimetype : 'application/octet-stream'}\r\n\r\n`;
  return {
    contentType: `multipart/form-data; boundary=${mark}`,
    head: encoder.encode(head),
    tail: encoder.encode(`\r\n--${mark}--\r\n`),
  };
}

// ---------------------------------------------------------------------------------------------
// Sources

type Source =
  | { kind: 'blob'; blob: Blob; size: number }
  | { kind: 'stream'; chunks: AsyncIterable<Uint8Array>; size: number; release: () => void };

function isWebStream(value: unknown): value is ReadableStream<Uint8Array> {
  return typeof value === 'object' && value !== null && typeof (value as ReadableStream).getReader === 'function';
}

function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return typeof value === 'object' && value !== null && typeof (value as AsyncIterable<unknown>)[Symbol.asyncIterator] === 'function';
}

async function* webStreamChunks(stream: ReadableStream<Uint8Array>): AsyncGenerator<Uint8Array> {
  const reader = stream.getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      yield value;
    }
  } finally {
    reader.releaseLock();
  }
}

async function* bytesOf(iterable: AsyncIterable<unknown>): AsyncGenerator<Uint8Array> {
  for await (const chunk of iterable) {
    if (typeof chunk === 'string') yield encoder.encode(chunk);
    else if (chunk instanceof Uint8Array) yield chunk;
    else if (chunk instanceof ArrayBuffer) yield new Uint8Array(chunk);
    else throw new TypeError('an upload stream must yield bytes (Uint8Array or Buffer) or strings');
  }
}

function sizeMismatch(expected: number, actual: number | string): RangeError {
  return new RangeError(`the data is ${actual} bytes but size says ${expected}`);
}

function checkSize(size: number): number {
  if (!Number.isSafeInteger(size) || size < 0) throw new RangeError(schemas.FileUploadRequest.properties.size['x-messages'].type);
  return size;
}

async function sourceOf(data: UploadData, declared: number | undefined): Promise<Source> {
  if (declared !== undefined) checkSize(declared);
  if (data instanceof Uint8Array || data instanceof ArrayBuffer) {
    const bytes = data instanceof ArrayBuffer ? new Uint8Array(data) : data;
    if (declared !== undefined && declared !== bytes.byteLength) throw sizeMismatch(declared, bytes.byteLength);
    return { kind: 'blob', blob: new Blob([bytes as Uint8Array<ArrayBuffer>]), size: bytes.byteLength };
  }
  if (data instanceof Blob) {
    if (declared !== undefined && declared !== data.size) throw sizeMismatch(declared, data.size);
    return { kind: 'blob', blob: data, size: data.size };
  }
  let chunks: AsyncIterable<Uint8Array>;
  let release: () => void;
  if (isWebStream(data)) {
    chunks = webStreamChunks(data);
    release = () => void data.cancel().catch(() => undefined);
  } else if (isAsyncIterable(data)) {
    chunks = bytesOf(data);
    release = () => (data as { destroy?: () => void }).destroy?.();
  } else {
    throw new TypeError('upload data must be a Buffer, Uint8Array, ArrayBuffer, Blob, ReadableStream or Node Readable');
  }
  if (declared !== undefined) return { kind: 'stream', chunks, size: declared, release };
  // Without a size the PUT cannot be made before the whole stream is read.
  const parts: Uint8Array<ArrayBuffer>[] = [];
  let total = 0;
  for await (const chunk of chunks) {
    total += chunk.byteLength;
    if (total > MAX_FILE_SIZE) {
      throw new RangeError(`${fillMessage(schemas.FileUploadRequest.properties.size['x-messages'].maximum, { maximum: MAX_FILE_SIZE })}; pass options.size to stream a file`);
    }
    parts.push(chunk as Uint8Array<ArrayBuffer>);
  }
  return { kind: 'blob', blob: new Blob(parts), size: total };
}

/** The bytes of a stream with a declared size, refusing to send more or fewer than declared. */
async function* exactly(chunks: AsyncIterable<Uint8Array>, size: number): AsyncGenerator<Uint8Array> {
  let sent = 0;
  for await (const chunk of chunks) {
    sent += chunk.byteLength;
    if (sent > size) throw sizeMismatch(size, `more than ${size}`);
    if (chunk.byteLength > 0) yield chunk;
  }
  if (sent !== size) throw sizeMismatch(size, sent);
}

/** A pull-driven stream: the next chunk is read from the source only when the socket wants it. */
function pullStream(parts: AsyncIterable<Uint8Array>, failure: { error?: unknown }): ReadableStream<Uint8Array> {
  const iterator = parts[Symbol.asyncIterator]();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { value, done } = await iterator.next();
        if (done) controller.close();
        else controller.enqueue(value);
      } catch (error) {
        failure.error = error;
        controller.error(error);
      }
    },
    async cancel(reason) {
      await iterator.return?.(reason);
    },
  });
}

async function* framed(head: Uint8Array, body: AsyncIterable<Uint8Array>, tail: Uint8Array): AsyncGenerator<Uint8Array> {
  yield head;
  yield* body;
  yield tail;
}

async function postForm(
  form: UploadForm,
  source: Source,
  key: string,
  options: UploadOptions,
  doFetch: typeof globalThis.fetch,
): Promise<Response> {
  const { contentType, head, tail } = frame(form.fields, options.filename || key, options.mimetype);
  const headers = new Headers({ Accept: JSON_ACCEPT, 'Content-Type': contentType });
  if (source.kind === 'blob') {
    // A Blob body has a known length and is read lazily by fetch (file-backed Blobs stay on disk).
    return doFetch(form.url, { method: 'POST', headers, body: new Blob([head, source.blob, tail]) });
  }
  headers.set('Content-Length', String(head.byteLength + source.size + tail.byteLength));
  const failure: { error?: unknown } = {};
  const body = pullStream(framed(head, exactly(source.chunks, source.size), tail), failure);
  try {
    return await doFetch(form.url, { method: 'POST', headers, body, duplex: 'half' } as RequestInit);
  } catch (error) {
    // fetch reports a failing body as "fetch failed"; the source's own error says why.
    throw failure.error ?? error;
  }
}

/**
 * The files of the row behind `filesUrl` (one of the `files` claim's URLs), called with `token`
 * (the claims' `api.token`).
 */
export function files(filesUrl: string, token: string, options: ToolRequestOptions = {}): FilesClient {
  const url = requireUrl(filesUrl, 'filesUrl');
  const bearer = requireToken(token, 'token');
  const doFetch = options.fetch ?? globalThis.fetch;
  return {
    url,
    list: () => callJson<FileList>(url, { method: 'GET', token: bearer }, options),
    read: (key) => callJson<FileDetail>(fileUrl(url, key), { method: 'GET', token: bearer }, options),
    delete: (key) => callJson<undefined>(fileUrl(url, key), { method: 'DELETE', token: bearer }, options),
    async upload(key, data, uploadOptions = {}) {
      const target = fileUrl(url, key);
      // A File (or typed Blob) already says what it is; options given explicitly win.
      if (data instanceof Blob) {
        const name = (data as Partial<File>).name;
        uploadOptions = {
          ...(data.type !== '' ? { mimetype: data.type } : {}),
          ...(typeof name === 'string' && name !== '' ? { filename: name } : {}),
          ...uploadOptions,
        };
      }
      const source = await sourceOf(data, uploadOptions.size);
      // `attachment` has a default, so the generated type makes it required; the wire does not.
      const request: Omit<components['schemas']['FileUploadRequest'], 'attachment'> & { attachment?: boolean } = {
        size: source.size,
        ...(uploadOptions.mimetype !== undefined ? { mimetype: uploadOptions.mimetype } : {}),
        ...(uploadOptions.filename !== undefined ? { filename: uploadOptions.filename } : {}),
        ...(uploadOptions.attachment !== undefined ? { attachment: uploadOptions.attachment } : {}),
      };
      const signed = await callJson<UploadForm>(target, { method: 'PUT', token: bearer, json: request }, options);
      if (signed.error) {
        // The stream was handed over to be uploaded; nothing else will read it now.
        if (source.kind === 'stream') source.release();
        return signed;
      }
      const response = await postForm(signed.data, source, key, uploadOptions, doFetch);
      if (!response.ok) return { error: await readProblem(response), response };
      await response.body?.cancel();
      return { data: { key, size: source.size }, response };
    },
  };
}
