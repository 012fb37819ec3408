/**
 * The backup archive's container: POSIX tar (ustar, with a pax `size` record for a member of 8 GiB or more),
 * regular files only, written and read here so that backups need no package (decision OPS-20). GNU tar and
 * bsdtar list and extract what this writes (`tar -tvf backup.tar`).
 *
 * Writing appends members one after another to a file opened here; each member's bytes come from a stream
 * of a size given up front, are counted (a source longer or shorter than announced is an error, never a
 * silently damaged archive) and hashed with SHA-256 on the way. Reading walks the headers of a file with
 * positioned reads, verifying every header's checksum, and lets the caller read a member's bytes by range;
 * anything but a regular file or a pax header, a cut-short archive or a missing end marker is refused.
 */
import { createHash } from 'node:crypto';
import type { FileHandle } from 'node:fs/promises';
import { open } from 'node:fs/promises';

const BLOCK = 512;
/** Largest size the 11 octal digits of a ustar header hold: 8 GiB - 1. */
const MAX_OCTAL_SIZE = 0o77777777777;
const READ_CHUNK = 1 << 20;

export class TarFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TarFormatError';
  }
}

function octal(value: number, width: number): string {
  // `width - 1` digits and a NUL, as ustar writes them.
  return `${value.toString(8).padStart(width - 1, '0')}\0`;
}

function header(name: string, size: number, typeflag: '0' | 'x', mode: number, mtimeSeconds: number): Buffer {
  const block = Buffer.alloc(BLOCK);
  const nameBytes = Buffer.from(name, 'utf8');
  if (nameBytes.length > 100) throw new RangeError(`tar member name longer than 100 bytes: ${name}`);
  nameBytes.copy(block, 0);
  block.write(octal(mode, 8), 100, 'ascii');
  block.write(octal(0, 8), 108, 'ascii');
  block.write(octal(0, 8), 116, 'ascii');
  block.write(octal(size, 12), 124, 'ascii');
  block.write(octal(mtimeSeconds, 12), 136, 'ascii');
  block.write('        ', 148, 'ascii');
  block.write(typeflag, 156, 'ascii');
  block.write('ustar\u000000', 257, 'ascii');
  let sum = 0;
  for (const byte of block) sum += byte;
  block.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'ascii');
  return block;
}

/** One pax record, `"<length> key=value\n"`, whose length counts its own digits. */
function paxRecord(key: string, value: string): Buffer {
  const body = ` ${key}=${value}\n`;
  let length = Buffer.byteLength(body) + 1;
  while (String(length).length + Buffer.byteLength(body) !== length) length = String(length).length + Buffer.byteLength(body);
  return Buffer.from(`${length}${body}`, 'utf8');
}

function padding(size: number): number {
  return (BLOCK - (size % BLOCK)) % BLOCK;
}

export interface WrittenMember {
  name: string;
  size: number;
  sha256: string;
}

export interface TarWriterOptions {
  /** Members of this size or more get their size in a pax record; default: above what ustar holds (tests lower it). */
  paxSizeFrom?: number;
}

export class TarWriter {
  #handle: FileHandle;
  #position = 0;
  readonly #paxSizeFrom: number;

  private constructor(handle: FileHandle, options: TarWriterOptions) {
    this.#handle = handle;
    this.#paxSizeFrom = Math.min(options.paxSizeFrom ?? MAX_OCTAL_SIZE + 1, MAX_OCTAL_SIZE + 1);
  }

  /** Creates `path` (which must not exist yet), readable by its owner only: an archive holds secrets. */
  static async create(path: string, options: TarWriterOptions = {}): Promise<TarWriter> {
    return new TarWriter(await open(path, 'wx', 0o600), options);
  }

  get bytesWritten(): number {
    return this.#position;
  }

  async #write(buffer: Uint8Array): Promise<void> {
    let offset = 0;
    while (offset < buffer.byteLength) {
      const { bytesWritten } = await this.#handle.write(buffer, offset, buffer.byteLength - offset, this.#position);
      offset += bytesWritten;
      this.#position += bytesWritten;
    }
  }

  /** Appends one regular file of exactly `size` bytes read from `source`; answers its SHA-256. */
  async add(name: string, size: number, source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>, options: { mode?: number; mtimeMs?: number } = {}): Promise<WrittenMember> {
    const mtime = Math.floor((options.mtimeMs ?? Date.now()) / 1000);
    const pax = size >= this.#paxSizeFrom;
    if (pax) {
      const record = paxRecord('size', String(size));
      await this.#write(header(`PaxHeaders/${name}`.slice(0, 100), record.length, 'x', 0o644, mtime));
      await this.#write(record);
      await this.#write(Buffer.alloc(padding(record.length)));
    }
    // With a pax size the header's own field says 0, as the pax record overrides it for every reader that reads pax.
    await this.#write(header(name, pax ? 0 : size, '0', options.mode ?? 0o600, mtime));
    const hash = createHash('sha256');
    let received = 0;
    for await (const chunk of source) {
      received += chunk.byteLength;
      if (received > size) throw new Error(`${name} grew while it was archived: more than ${size} bytes`);
      hash.update(chunk);
      await this.#write(chunk);
    }
    if (received !== size) throw new Error(`${name} ended after ${received} of its ${size} bytes`);
    await this.#write(Buffer.alloc(padding(size)));
    return { name, size, sha256: hash.digest('hex') };
  }

  /** Writes the end marker (two zero blocks), makes the file durable and closes it. */
  async finish(): Promise<void> {
    await this.#write(Buffer.alloc(2 * BLOCK));
    await this.#handle.sync();
    await this.close();
  }

  async close(): Promise<void> {
    await this.#handle.close().catch(() => undefined);
  }
}

export interface TarMember {
  name: string;
  size: number;
  mode: number;
  /** Where its bytes start in the archive. */
  offset: number;
}

function text(block: Buffer, start: number, length: number): string {
  const field = block.subarray(start, start + length);
  const end = field.indexOf(0);
  return field.subarray(0, end === -1 ? length : end).toString('utf8');
}

function number(block: Buffer, start: number, length: number, what: string): number {
  const raw = text(block, start, length).trim();
  if (!/^[0-7]*$/.test(raw)) throw new TarFormatError(`a member header's ${what} is not an octal number`);
  return raw === '' ? 0 : parseInt(raw, 8);
}

function parsePax(data: Buffer): Map<string, string> {
  const records = new Map<string, string>();
  let at = 0;
  while (at < data.length) {
    const space = data.indexOf(0x20, at);
    const length = space === -1 ? NaN : Number(data.subarray(at, space).toString('ascii'));
    if (!Number.isSafeInteger(length) || length <= 0 || at + length > data.length) throw new TarFormatError('a pax header is malformed');
    const record = data.subarray(space + 1, at + length - 1).toString('utf8');
    const eq = record.indexOf('=');
    if (eq === -1) throw new TarFormatError('a pax header is malformed');
    records.set(record.slice(0, eq), record.slice(eq + 1));
    at += length;
  }
  return records;
}

/** An archive opened for reading: its members (headers verified), and their bytes by range. */
export class TarReader {
  readonly #handle: FileHandle;
  readonly size: number;

  private constructor(handle: FileHandle, size: number) {
    this.#handle = handle;
    this.size = size;
  }

  static async open(path: string): Promise<TarReader> {
    const handle = await open(path, 'r');
    try {
      const { size, isFile } = await handle.stat().then((s) => ({ size: s.size, isFile: s.isFile() }));
      if (!isFile) throw new TarFormatError(`${path} is not a file`);
      return new TarReader(handle, size);
    } catch (err) {
      await handle.close();
      throw err;
    }
  }

  async #read(position: number, length: number): Promise<Buffer> {
    if (position + length > this.size) throw new TarFormatError('the archive is cut short');
    const buffer = Buffer.alloc(length);
    let done = 0;
    while (done < length) {
      const { bytesRead } = await this.#handle.read(buffer, done, length - done, position + done);
      if (bytesRead === 0) throw new TarFormatError('the archive is cut short');
      done += bytesRead;
    }
    return buffer;
  }

  /** Every regular file, in order. Throws `TarFormatError` on anything this module did not write. */
  async *members(): AsyncGenerator<TarMember> {
    let position = 0;
    let pax: Map<string, string> | null = null;
    for (;;) {
      const block = await this.#read(position, BLOCK);
      if (block.every((b) => b === 0)) {
        // The end marker is two zero blocks; the second must be there too, or the archive was cut.
        const next = await this.#read(position + BLOCK, BLOCK);
        if (!next.every((b) => b === 0)) throw new TarFormatError('a zero block in the middle of the archive');
        return;
      }
      if (text(block, 257, 5) !== 'ustar') throw new TarFormatError('it is not a POSIX tar archive');
      const stored = number(block, 148, 8, 'checksum');
      let sum = 0;
      for (let i = 0; i < BLOCK; i += 1) sum += i >= 148 && i < 156 ? 0x20 : block[i]!;
      if (sum !== stored) throw new TarFormatError(`a member header at byte ${position} is damaged (checksum)`);
      const typeflag = String.fromCharCode(block[156]!);
      let size = number(block, 124, 12, 'size');
      const name = text(block, 0, 100);
      const offset = position + BLOCK;
      position = offset + size + padding(size);
      if (typeflag === 'x') {
        if (size > 1 << 20) throw new TarFormatError('a pax header is too large');
        pax = parsePax(await this.#read(offset, size));
        continue;
      }
      if (typeflag !== '0' && typeflag !== '\0') throw new TarFormatError(`member ${name} is not a regular file (type ${JSON.stringify(typeflag)})`);
      if (pax?.has('size')) {
        const paxSize = Number(pax.get('size'));
        if (!Number.isSafeInteger(paxSize) || paxSize < 0) throw new TarFormatError(`member ${name} has a malformed pax size`);
        size = paxSize;
        position = offset + size + padding(size);
      }
      const paxName = pax?.get('path');
      pax = null;
      if (offset + size > this.size) throw new TarFormatError('the archive is cut short');
      yield { name: paxName ?? name, size, mode: number(block, 100, 8, 'mode'), offset };
    }
  }

  /** A member's bytes, a chunk at a time. */
  async *bytes(member: TarMember): AsyncGenerator<Buffer> {
    let done = 0;
    while (done < member.size) {
      const length = Math.min(READ_CHUNK, member.size - done);
      yield await this.#read(member.offset + done, length);
      done += length;
    }
  }

  async close(): Promise<void> {
    await this.#handle.close().catch(() => undefined);
  }
}
