/**
 * The content type of a file whose PUT left `mimetype` empty: guessed from the filename's extension, then
 * the key's, falling back to `application/octet-stream`. A short map of what tools store (documents,
 * images, media, data, archives, web assets) is enough: the tool can always name the type itself.
 */

export const DEFAULT_CONTENT_TYPE = 'application/octet-stream';

const BY_EXTENSION: Readonly<Record<string, string>> = {
  // documents
  pdf: 'application/pdf',
  txt: 'text/plain',
  text: 'text/plain',
  log: 'text/plain',
  md: 'text/markdown',
  markdown: 'text/markdown',
  rtf: 'application/rtf',
  doc: 'application/msword',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  xls: 'application/vnd.ms-excel',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  ppt: 'application/vnd.ms-powerpoint',
  pptx: 'application/vnd.openxmlformats-officedocument.presentationml.presentation',
  odt: 'application/vnd.oasis.opendocument.text',
  ods: 'application/vnd.oasis.opendocument.spreadsheet',
  odp: 'application/vnd.oasis.opendocument.presentation',
  epub: 'application/epub+zip',
  // data
  csv: 'text/csv',
  tsv: 'text/tab-separated-values',
  json: 'application/json',
  jsonl: 'application/jsonl',
  ndjson: 'application/x-ndjson',
  xml: 'application/xml',
  yaml: 'application/yaml',
  yml: 'application/yaml',
  ics: 'text/calendar',
  // web
  html: 'text/html',
  htm: 'text/html',
  css: 'text/css',
  js: 'text/javascript',
  mjs: 'text/javascript',
  wasm: 'application/wasm',
  // images
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
  avif: 'image/avif',
  svg: 'image/svg+xml',
  ico: 'image/vnd.microsoft.icon',
  bmp: 'image/bmp',
  tif: 'image/tiff',
  tiff: 'image/tiff',
  heic: 'image/heic',
  // audio and video
  mp3: 'audio/mpeg',
  wav: 'audio/wav',
  ogg: 'audio/ogg',
  oga: 'audio/ogg',
  m4a: 'audio/mp4',
  flac: 'audio/flac',
  weba: 'audio/webm',
  mp4: 'video/mp4',
  m4v: 'video/mp4',
  webm: 'video/webm',
  ogv: 'video/ogg',
  mov: 'video/quicktime',
  vtt: 'text/vtt',
  srt: 'application/x-subrip',
  // fonts
  woff: 'font/woff',
  woff2: 'font/woff2',
  ttf: 'font/ttf',
  otf: 'font/otf',
  // archives and binaries
  zip: 'application/zip',
  gz: 'application/gzip',
  tgz: 'application/gzip',
  tar: 'application/x-tar',
  '7z': 'application/x-7z-compressed',
  bin: 'application/octet-stream',
  // notebooks and code that learning tools keep
  ipynb: 'application/x-ipynb+json',
  py: 'text/x-python',
  java: 'text/x-java-source',
  c: 'text/x-c',
  h: 'text/x-c',
  cpp: 'text/x-c++',
  sql: 'application/sql',
};

/** The media type of a name's extension (after its last dot, case-insensitive), or null when unknown. */
export function contentTypeOfName(name: string): string | null {
  const dot = name.lastIndexOf('.');
  if (dot < 0 || dot === name.length - 1) return null;
  const extension = name.slice(dot + 1).toLowerCase();
  return Object.prototype.hasOwnProperty.call(BY_EXTENSION, extension) ? (BY_EXTENSION[extension] ?? null) : null;
}

/** The PUT's `mimetype` when given, else a guess from `filename`, then from `key`. */
export function resolveContentType(mimetype: string | undefined, filename: string | undefined, key: string): string {
  if (mimetype) return mimetype;
  return (filename ? contentTypeOfName(filename) : null) ?? contentTypeOfName(key) ?? DEFAULT_CONTENT_TYPE;
}
