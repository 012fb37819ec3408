/**
 * The settings of `BLOB_STORE=s3` (decision OBJ-01), read with the rest of the configuration so a typo stops
 * the start. Credentials are not settings: the AWS SDK's default chain finds them (environment, shared
 * files, web identity, instance or task role), and nothing here reads, keeps or logs them.
 */

export interface S3Settings {
  /** `S3_BUCKET`: the bucket that holds every file. */
  bucket: string;
  /** `S3_REGION`: the bucket's region (`auto` for R2; MinIO accepts any, usually `us-east-1`). */
  region: string;
  /** `S3_ENDPOINT`: another S3-compatible service (MinIO, R2, Ceph, a local server); null is AWS S3. */
  endpoint: string | null;
  /** `S3_FORCE_PATH_STYLE`: `{endpoint}/{bucket}/{key}` instead of `{bucket}.{endpoint}/{key}`. */
  forcePathStyle: boolean;
}

/** S3's bucket naming rules (lower case, digits, dots, hyphens; 3 to 63 characters). */
const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
const REGION = /^[a-z0-9-]{1,64}$/;

type ParseBool = (name: string, raw: string | undefined, fallback: boolean, problems: string[]) => boolean;

/** Null unless `BLOB_STORE=s3`; then every problem with the S3 lines is pushed, named by its variable. */
export function readS3Settings(
  env: NodeJS.ProcessEnv,
  selected: boolean,
  problems: string[],
  parseBool: ParseBool,
): S3Settings | null {
  const names = ['S3_BUCKET', 'S3_REGION', 'S3_ENDPOINT', 'S3_FORCE_PATH_STYLE'] as const;
  if (!selected) {
    const stray = names.filter((name) => (env[name]?.trim() ?? '') !== '');
    // Set but unused would silently keep files where the operator did not expect them.
    if (stray.length > 0) problems.push(`${stray.join(', ')} ${stray.length === 1 ? 'is' : 'are'} set but BLOB_STORE is not s3`);
    return null;
  }
  const bucket = env['S3_BUCKET']?.trim() ?? '';
  if (bucket === '') problems.push('BLOB_STORE=s3 needs S3_BUCKET, the bucket that holds the files');
  else if (!BUCKET.test(bucket)) problems.push(`S3_BUCKET must be a bucket name (3 to 63 lower-case letters, digits, '.' or '-'), got ${JSON.stringify(bucket)}`);
  const region = env['S3_REGION']?.trim() ?? '';
  if (region === '') problems.push('BLOB_STORE=s3 needs S3_REGION (for example eu-west-1; auto for R2; us-east-1 for MinIO)');
  else if (!REGION.test(region)) problems.push(`S3_REGION must be a region name such as eu-west-1, got ${JSON.stringify(region)}`);
  const endpointRaw = env['S3_ENDPOINT']?.trim() || null;
  let endpoint: string | null = null;
  if (endpointRaw !== null) {
    let parsed: URL | null = null;
    try {
      parsed = new URL(endpointRaw);
    } catch {
      problems.push(`S3_ENDPOINT must be a URL such as https://minio.example.edu:9000, got ${JSON.stringify(endpointRaw)}`);
    }
    if (parsed) {
      if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') {
        problems.push(`S3_ENDPOINT must use https:// (or http:// for a local server), got ${parsed.protocol}`);
      } else if (parsed.username || parsed.password) {
        problems.push('S3_ENDPOINT must not carry credentials: the AWS SDK reads them from its usual places');
      } else if ((parsed.pathname !== '/' && parsed.pathname !== '') || parsed.search || parsed.hash) {
        problems.push(`S3_ENDPOINT must be an origin with no path, got ${JSON.stringify(endpointRaw)}`);
      } else {
        endpoint = parsed.origin;
      }
    }
  }
  const forcePathStyle = parseBool('S3_FORCE_PATH_STYLE', env['S3_FORCE_PATH_STYLE'], false, problems);
  return { bucket, region, endpoint, forcePathStyle };
}
