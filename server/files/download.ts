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

/**
 * The signed URL names one stored version of the file (a replacement gets a new URL) and stops working at
 * its expiry, so the browser that fetched it may keep the bytes that long and no longer; shared caches may
 * not keep them at all, since the URL is a credential (H-06).
 */
export function downloadCacheControl(remainingMs: number): string {
  const seconds = Math.floor(remainingMs / 1000);
  return seconds > 0 ? `private, max-age=${seconds}` : 'private, no-store';
}

export function downloadHeaders(
  file: Pick<FileRecord, 'contentType' | 'filename' | 'attachment'>,
  size: number,
  remainingMs = 0,
): Record<string, string> {
  return {
    'Content-Type': file.contentType,
    'Content-Length': String(size),
    'Content-Disposition': contentDisposition(file.filename, file.attachment),
    'X-Content-Type-Options': 'nosniff',
    'Content-Security-Policy': 'sandbox',
    'Cache-Control': downloadCacheControl(remainingMs),
    'Referrer-Policy': 'no-referrer',
    'Cross-Origin-Resource-Policy': 'cross-origin',
  };
}
