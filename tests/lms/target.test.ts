/**
 * The LMS reads a plain request target without the URL parser (PERF-114): its path and query must be
 * exactly what `new URL(target, base)` gives, for plain targets and for every kind it hands on to the parser.
 */
import { describe, expect, it } from 'vitest';
import { targetOf } from '../../lms/app.ts';

function parsed(target: string): { pathname: string; params: [string, string][] } {
  const url = targetOf(target);
  return { pathname: url.pathname, params: [...url.searchParams] };
}

function byParser(target: string): { pathname: string; params: [string, string][] } {
  const url = new URL(target, 'http://lms.invalid');
  return { pathname: url.pathname, params: [...url.searchParams] };
}

describe('a request target read by the LMS', () => {
  it('means what the URL parser makes of it', () => {
    const targets = [
      '/',
      '/ags/courses/course-abc/lineitems/li-x_y-z/scores',
      '/api/lti/courses/0f3a/line_items/12',
      '/mod/lti/services.php/12/lineitems/3/lineitem/scores?type_id=1',
      '/lms/ags/courses/c/lineitems?resource_link_id=rl-1&tag=quiz&tag=again&x=%20+y',
      '/.well-known/openid-configuration',
      '/controls/deployments/7:abc/settings',
      '/a/./b',
      '/a/../b',
      '/a/%2e%2E/b',
      '/a/%2E/b',
      '/a/.',
      '/a/..',
      '/a/.hidden/..b/c..',
      '//elsewhere/x',
      '/a\\b',
      '/a b',
      '/é',
      '/a?é=1',
      '/a?b c',
      '/a#fragment',
      '/a??x=1',
      '/a?x="y"&z=\'w\'',
      '/a%00',
      '/a?x=%00',
      '/a?%zz=1',
      '/a/%2F/b',
      '/a?q=a/b?c',
      '*',
    ];
    for (const target of targets) expect(parsed(target), target).toEqual(byParser(target));
  });
});
