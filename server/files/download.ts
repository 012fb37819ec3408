/**
 * Response headers of a signed download (decision S-02). Uploaded bytes are served from the service's
 * own origin, so they are never sniffed into something else, and `Content-Security-Policy: sandbox`
 * gives an HTML or SVG file shown inline a unique opaque origin with no script.
 */
import type { FileRecord } from '../store/index.js';

/** RFC 8187 `attr-char`: everything else is percent-encoded in `filename*`. */
function encodeRfc8187(value: string): string {
  return encodeURIComponent(value).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** An ASCII stand-in for clients that ignore `filename*`: quoted-string safe, never empty. */
function asciiFallback(value: string): string {
  const ascii = value.replace(/[^\x20-\x7E]/g, '_').replace(/["\\]/g, '_');
  return ascii.trim() === '' ? 'download' : ascii;
}

export function contentDisposition(filename: string, attachment: boolean): string {
  const type = attachment ? 'attachment' : 'inline';
  return `${type}; filename="${asciiFallback(filename)}"; filename*=UTF-8''${encodeRfc8187(filename)}`;
}

export function downloadHeaders(file: Pick<FileRecord, 'contentType' | 'filename' | 'attachment'>, size: number): Record<string, string> {
  return {
    'Content-Type': file.contentType,
    'Content-Length': String(size),
    'Content-Disposition': contentDisposition(file.filename, file.attachment),
    'X-Content-Type-Options': 'nosniff',
    'Content-Security-Policy': 'sandbox',
    // The URL is a short-lived credential, and its file can be replaced: nobody should keep a copy.
    'Cache-Control': 'private, no-store',
    'Referrer-Policy': 'no-referrer',
    'Cross-Origin-Resource-Policy': 'cross-origin',
  };
}
