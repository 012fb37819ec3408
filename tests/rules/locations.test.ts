import { describe, expect, it } from 'vitest';
import {
  LOCATIONS_FAILURE_MESSAGES,
  LocationsResponseError,
  locationsResponse,
  normalizeLocationsResponse,
  type LocationsResult,
  type PickerGroup,
  type PickerTree,
} from '../../rules/locations.js';

function tree(input: unknown, options = {}): PickerTree {
  const result = normalizeLocationsResponse(input, options);
  if (!result.ok) throw new Error(`expected success, got ${result.message}: ${result.detail}`);
  return result.tree;
}

function refused(input: unknown, options = {}): Exclude<LocationsResult, { ok: true }> {
  const result = normalizeLocationsResponse(input, options);
  if (result.ok) throw new Error(`expected a refusal, got ${JSON.stringify(result.tree)}`);
  return result;
}

/** A group `levels` deep, each level holding the next. */
function nested(levels: number): unknown {
  let group: Record<string, unknown> = { label: `Level ${levels}` };
  for (let level = levels - 1; level >= 1; level--) group = { label: `Level ${level}`, grouped_locations: [group] };
  return { grouped_locations: [group] };
}

describe('normalizeLocationsResponse: success', () => {
  it('normalises a full response in the order sent: locations, then groups, at every level', () => {
    const body = JSON.stringify({
      message: 'Pick <b>one</b>',
      locations: {
        intro: { type: 'content', label: 'Intro' },
        quiz: { type: 'assessment', label: 'Quiz', description: '<i>Ten</i> questions', points: 20 },
      },
      grouped_locations: [
        {
          label: 'Week 1',
          description: 'First week',
          locations: { 'w1-reading': { type: 'content', label: 'Reading' } },
          grouped_locations: [{ label: 'Extras', locations: { 'w1-x': { type: 'practice', label: 'Drill' } } }],
        },
        { label: 'Empty group' },
      ],
    });
    expect(tree(body)).toEqual({
      message: 'Pick one',
      locations: [
        { extid: 'intro', type: 'content', label: 'Intro' },
        { extid: 'quiz', type: 'assessment', label: 'Quiz', description: 'Ten questions', points: 20 },
      ],
      groups: [
        {
          label: 'Week 1',
          description: 'First week',
          locations: [{ extid: 'w1-reading', type: 'content', label: 'Reading' }],
          groups: [{ label: 'Extras', locations: [{ extid: 'w1-x', type: 'practice', label: 'Drill' }], groups: [] }],
        },
        { label: 'Empty group', locations: [], groups: [] },
      ],
    });
  });

  it('keeps digit-only extids where the tool put them, in the raw text path', () => {
    const body = '{"locations":{"b":{"type":"content","label":"B"},"10":{"type":"content","label":"Ten"},"a":{"type":"content","label":"A"},"2":{"type":"content","label":"Two"}},' +
      '"grouped_locations":[{"label":"G","locations":{"z":{"type":"setup","label":"Z"},"1":{"type":"setup","label":"One"}}}]}';
    const result = tree(body);
    expect(result.locations.map((l) => l.extid)).toEqual(['b', '10', 'a', '2']);
    expect((result.groups[0] as PickerGroup).locations.map((l) => l.extid)).toEqual(['z', '1']);
    // The same body through JSON.parse shows what the order-keeping parse avoids.
    expect(tree(JSON.parse(body)).locations.map((l) => l.extid)).toEqual(['2', '10', 'b', 'a']);
  });

  it('reads raw bytes and strips a UTF-8 byte order mark', () => {
    const bytes = new TextEncoder().encode('\ufeff{"message":"hi"}');
    expect(tree(bytes).message).toBe('hi');
  });

  it('gives points 100 by default, keeps them only for assessments, and ignores them otherwise', () => {
    const result = tree({
      locations: {
        a: { type: 'assessment', label: 'A' },
        b: { type: 'assessment', label: 'B', points: 2.5 },
        c: { type: 'content', label: 'C', points: 50 },
        d: { type: 'practice', label: 'D', points: 'lots' },
      },
    });
    expect(result.locations.map((l) => l.points)).toEqual([100, 2.5, undefined, undefined]);
    expect(Object.prototype.hasOwnProperty.call(result.locations[2], 'points')).toBe(false);
  });

  it('reduces labels and descriptions to plain text and cuts them at 200 code points', () => {
    const long = '\u{1F600}'.repeat(300);
    const result = tree({
      locations: { x: { type: 'content', label: `<b>${long}</b>`, description: '&amp;&nbsp;<br>ok  ' } },
      grouped_locations: [{ label: `  ${long} `, description: long }],
    });
    const entry = result.locations[0];
    expect(Array.from(entry?.label ?? '')).toHaveLength(200);
    expect(entry?.description).toBe('& ok');
    expect(Array.from(result.groups[0]?.label ?? '')).toHaveLength(200);
    expect(Array.from(result.groups[0]?.description ?? '')).toHaveLength(200);
  });

  it('drops a description that is empty after reduction', () => {
    const result = tree({ locations: { x: { type: 'content', label: 'X', description: '<br> ' } } });
    expect(result.locations[0]).toEqual({ extid: 'x', type: 'content', label: 'X' });
  });

  it('keeps line breaks in the message, strips markup, and cuts at 2000', () => {
    expect(tree({ message: '<p>Hello</p><p>Second&nbsp;&nbsp;line</p>' }).message).toBe('Hello\nSecond line');
    expect(Array.from(tree({ message: 'é'.repeat(2500) }).message ?? '')).toHaveLength(2000);
    expect(tree({ message: '<br>', locations: {} }).message).toBeNull();
  });

  it('accepts each key on its own, including an empty locations map', () => {
    expect(tree({ message: 'Nothing available' })).toEqual({ locations: [], groups: [], message: 'Nothing available' });
    expect(tree({ locations: {} })).toEqual({ locations: [], groups: [], message: null });
    expect(tree({ grouped_locations: [] })).toEqual({ locations: [], groups: [], message: null });
  });

  it('ignores unknown keys at the top, in entries and in groups (decision GAP-09)', () => {
    const result = tree({
      locations: { x: { type: 'content', label: 'X', color: 'red', params: { a: 1 } } },
      grouped_locations: [{ label: 'G', open: true, icon: 3 }],
      extra: [1, 2],
    });
    expect(result.locations[0]).toEqual({ extid: 'x', type: 'content', label: 'X' });
    expect(result.groups[0]).toEqual({ label: 'G', locations: [], groups: [] });
  });

  it('accepts groups nested exactly 5 levels (decision GAP-08)', () => {
    let group: PickerGroup | undefined = tree(nested(5)).groups[0];
    const labels: string[] = [];
    while (group) {
      labels.push(group.label);
      group = group.groups[0];
    }
    expect(labels).toEqual(['Level 1', 'Level 2', 'Level 3', 'Level 4', 'Level 5']);
  });

  it('accepts an empty subgroup list at level 5', () => {
    let group: Record<string, unknown> = { label: 'L5', grouped_locations: [] };
    for (let level = 4; level >= 1; level--) group = { label: `L${level}`, grouped_locations: [group] };
    expect(normalizeLocationsResponse({ grouped_locations: [group] }).ok).toBe(true);
  });

  it('accepts every extid character and 128 of them', () => {
    const extid = `${'aZ09_-'.repeat(21)}xy`;
    expect(extid).toHaveLength(128);
    expect(tree({ locations: { [extid]: { type: 'setup', label: 'S' } } }).locations[0]?.extid).toBe(extid);
  });

  it('shows one extid twice when two groups carry it', () => {
    const entry = { type: 'content', label: 'Shared' };
    const result = tree({ grouped_locations: [{ label: 'A', locations: { s: entry } }, { label: 'B', locations: { s: entry } }] });
    expect(result.groups.map((g) => g.locations[0]?.extid)).toEqual(['s', 's']);
  });

  it('handles __proto__ as an ordinary extid without polluting', () => {
    const result = tree('{"locations":{"__proto__":{"type":"content","label":"P"}}}');
    expect(result.locations.map((l) => l.extid)).toEqual(['__proto__']);
    expect(({} as Record<string, unknown>)['type']).toBeUndefined();
  });
});

describe('normalizeLocationsResponse: the contract failure table', () => {
  it('uses the contract texts exactly', () => {
    expect(LOCATIONS_FAILURE_MESSAGES).toEqual({
      invalid_json: 'the app returned invalid JSON',
      invalid_structure: 'the app returned an invalid locations structure',
      nesting_too_deep: 'the app nested location groups more than 5 levels deep',
      empty_group_label: 'the app returned a location group with an empty label',
    });
  });

  it.each([
    ['an HTML page', '<html>oops</html>'],
    ['an empty body', ''],
    ['trailing garbage', '{"message":"x"} trailing'],
    ['a trailing comma', '{"locations":{},}'],
    ['no body at all', undefined],
    ['bytes that are not UTF-8', new Uint8Array([0x7b, 0xff, 0x7d])],
  ])('refuses %s as invalid JSON', (_name, input) => {
    const result = refused(input);
    expect(result.code).toBe('invalid_json');
    expect(result.message).toBe('the app returned invalid JSON');
    expect(result.path).toBeNull();
  });

  it.each<[string, unknown, string]>([
    ['an array', '[]', 'the response must be a JSON object, not an array'],
    ['a string', '"hello"', 'the response must be a JSON object, not a string'],
    ['null', 'null', 'the response must be a JSON object, not null'],
    ['none of the keys', { other: 1 }, 'the response names none of locations, grouped_locations, message'],
    ['an empty object', {}, 'the response names none of locations, grouped_locations, message'],
    ['locations as an array', { locations: [] }, '/locations must be an object mapping extids to location entries, not an array'],
    ['locations as null', { locations: null }, '/locations must be an object mapping extids to location entries, not null'],
    ['message as a number', { message: 5 }, '/message must be a string, not a number'],
    ['message as null', { message: null }, '/message must be a string, not null'],
    ['grouped_locations as an object', { grouped_locations: {} }, '/grouped_locations must be an array of groups, not an object'],
    ['a bad extid', { locations: { 'has space': { type: 'content', label: 'X' } } }, '/locations/has space extid must be 1 to 128 letters, digits, underscores or dashes'],
    ['a slash in an extid', { locations: { 'a/b': { type: 'content', label: 'X' } } }, '/locations/a~1b extid must be 1 to 128 letters, digits, underscores or dashes'],
    ['an empty extid', { locations: { '': { type: 'content', label: 'X' } } }, '/locations/ extid must be 1 to 128 letters, digits, underscores or dashes'],
    ['a 129-character extid', { locations: { ['x'.repeat(129)]: { type: 'content', label: 'X' } } }, `/locations/${'x'.repeat(129)} extid must be 1 to 128 letters, digits, underscores or dashes`],
    ['a non-ASCII extid', { locations: { 'é': { type: 'content', label: 'X' } } }, '/locations/é extid must be 1 to 128 letters, digits, underscores or dashes'],
    ['an entry that is a string', { locations: { x: 'content' } }, '/locations/x must be a location entry object, not a string'],
    ['a missing type', { locations: { x: { label: 'X' } } }, '/locations/x/type is required'],
    ['an unknown type', { locations: { x: { type: 'quiz', label: 'X' } } }, '/locations/x/type must be one of assessment, practice, content, setup'],
    ['a type in capitals', { locations: { x: { type: 'Assessment', label: 'X' } } }, '/locations/x/type must be one of assessment, practice, content, setup'],
    ['a missing entry label', { locations: { x: { type: 'content' } } }, '/locations/x/label is required'],
    ['an entry label that is a number', { locations: { x: { type: 'content', label: 7 } } }, '/locations/x/label must be a string, not a number'],
    ['an entry label of markup only (decision GAP-11)', { locations: { x: { type: 'content', label: '<b> </b>&nbsp;' } } }, '/locations/x/label must not be empty, white space or markup only'],
    ['a description that is an object', { locations: { x: { type: 'content', label: 'X', description: {} } } }, '/locations/x/description must be a string, not an object'],
    ['points of zero', { locations: { x: { type: 'assessment', label: 'X', points: 0 } } }, '/locations/x/points must be a number greater than 0'],
    ['negative points', { locations: { x: { type: 'assessment', label: 'X', points: -5 } } }, '/locations/x/points must be a number greater than 0'],
    ['points as a string', { locations: { x: { type: 'assessment', label: 'X', points: '10' } } }, '/locations/x/points must be a number greater than 0'],
    ['points of null', { locations: { x: { type: 'assessment', label: 'X', points: null } } }, '/locations/x/points must be a number greater than 0'],
    ['a group that is a string', { grouped_locations: ['Week 1'] }, '/grouped_locations/0 must be a group object, not a string'],
    ['a group label that is a number (decision GAP-09)', { grouped_locations: [{ label: 3 }] }, '/grouped_locations/0/label must be a string, not a number'],
    ['a group locations array', { grouped_locations: [{ label: 'G', locations: [] }] }, '/grouped_locations/0/locations must be an object mapping extids to location entries, not an array'],
    ['a bad entry deep in a group', { grouped_locations: [{ label: 'G', grouped_locations: [{ label: 'H', locations: { x: { type: 'nope', label: 'X' } } }] }] }, '/grouped_locations/0/grouped_locations/0/locations/x/type must be one of assessment, practice, content, setup'],
  ])('refuses %s as an invalid structure, with detail', (_name, input, detail) => {
    const result = refused(input);
    expect(result).toMatchObject({ code: 'invalid_structure', message: 'the app returned an invalid locations structure', detail });
  });

  it('refuses points of Infinity, which JSON.parse makes of 1e400', () => {
    const result = refused('{"locations":{"x":{"type":"assessment","label":"X","points":1e400}}}');
    expect(result.detail).toBe('/locations/x/points must be a number greater than 0');
  });

  it('refuses a group at level 6 (decision GAP-08)', () => {
    const result = refused(nested(6));
    expect(result).toMatchObject({
      code: 'nesting_too_deep',
      message: 'the app nested location groups more than 5 levels deep',
      path: '/grouped_locations/0/grouped_locations/0/grouped_locations/0/grouped_locations/0/grouped_locations/0/grouped_locations/0',
    });
    expect(result.detail).toMatch(/is a group at level 6; a top-level group is level 1/);
  });

  it('refuses very deep nesting without exhausting the stack', () => {
    expect(refused(nested(5000)).code).toBe('nesting_too_deep');
  });

  it.each<[string, unknown]>([
    ['an empty label', { grouped_locations: [{ label: '' }] }],
    ['a white-space label', { grouped_locations: [{ label: ' \n\t ' }] }],
    ['a markup-only label', { grouped_locations: [{ label: '<b></b><br/>&nbsp;' }] }],
    ['a missing label (decision GAP-09)', { grouped_locations: [{ locations: {} }] }],
    ['an empty label in a subgroup', { grouped_locations: [{ label: 'ok', grouped_locations: [{ label: '<i> </i>' }] }] }],
  ])('refuses a group with %s', (_name, input) => {
    const result = refused(input);
    expect(result).toMatchObject({ code: 'empty_group_label', message: 'the app returned a location group with an empty label' });
  });

  it('reports the first problem in document order', () => {
    const result = refused({ locations: { 'bad id': { type: 'content', label: 'X' } }, grouped_locations: [{ label: '' }] });
    expect(result.code).toBe('invalid_structure');
    const second = refused({ locations: { ok: { type: 'content', label: 'X' } }, grouped_locations: [{ label: '' }, { label: 'x', locations: [] }] });
    expect(second.code).toBe('empty_group_label');
  });
});

describe('normalizeLocationsResponse under an archived contract (decision GAP-46)', () => {
  const v = { contractVersion: '2026-08-25' } as const;

  it('ignores message and grouped_locations like unknown keys', () => {
    const result = tree({ locations: { x: { type: 'content', label: 'X' } }, message: 'hi', grouped_locations: [{ label: 'G' }] }, v);
    expect(result).toEqual({ locations: [{ extid: 'x', type: 'content', label: 'X' }], groups: [], message: null });
  });

  it('does not validate the ignored keys', () => {
    expect(tree({ locations: {}, message: 5, grouped_locations: [{ label: '' }] }, v).groups).toEqual([]);
  });

  it('refuses a response naming only keys it ignores', () => {
    expect(refused({ message: 'Nothing available' }, v).detail).toBe('the response names none of locations');
    expect(refused({ grouped_locations: [] }, v).code).toBe('invalid_structure');
  });

  it('honours message and groups under the current contract by default', () => {
    expect(tree({ message: 'hi' }).message).toBe('hi');
  });
});

describe('locationsResponse builder', () => {
  it('builds the JSON the service accepts, in build order', () => {
    const body = locationsResponse()
      .location('intro', { type: 'content', label: 'Intro' })
      .group('Week 1', (g) =>
        g
          .description('First week')
          .location('w1-quiz', { type: 'assessment', label: 'Quiz', points: 10 })
          .group('Extras', (h) => h.location('w1-x', { type: 'practice', label: 'Drill' })),
      )
      .group('Later')
      .message('Pick what to add')
      .toJSON();
    expect(JSON.stringify(body)).toBe(
      JSON.stringify({
        locations: { intro: { type: 'content', label: 'Intro' } },
        grouped_locations: [
          {
            label: 'Week 1',
            description: 'First week',
            locations: { 'w1-quiz': { type: 'assessment', label: 'Quiz', points: 10 } },
            grouped_locations: [{ label: 'Extras', locations: { 'w1-x': { type: 'practice', label: 'Drill' } } }],
          },
          { label: 'Later' },
        ],
        message: 'Pick what to add',
      }),
    );
    expect(normalizeLocationsResponse(JSON.stringify(body)).ok).toBe(true);
  });

  it('always sends a locations map, so an empty builder says "nothing available"', () => {
    expect(locationsResponse().toJSON()).toEqual({ locations: {} });
  });

  it('keeps digit-only extids in place in toJSONText, which the service reads back in that order', () => {
    const builder = locationsResponse()
      .location('b', { type: 'content', label: 'B' })
      .location('10', { type: 'content', label: 'Ten' })
      .location('a', { type: 'content', label: 'A' });
    const text = builder.toJSONText();
    expect(text).toBe('{"locations":{"b":{"type":"content","label":"B"},"10":{"type":"content","label":"Ten"},"a":{"type":"content","label":"A"}}}');
    expect(tree(text).locations.map((l) => l.extid)).toEqual(['b', '10', 'a']);
    expect(builder.toPickerTree().locations.map((l) => l.extid)).toEqual(['b', '10', 'a']);
  });

  it('shows the picker the service would show', () => {
    const picker = locationsResponse().location('q', { type: 'assessment', label: '<b>Quiz</b>' }).toPickerTree();
    expect(picker.locations).toEqual([{ extid: 'q', type: 'assessment', label: 'Quiz', points: 100 }]);
  });

  function thrown(build: () => unknown): LocationsResponseError {
    try {
      build();
    } catch (caught) {
      if (caught instanceof LocationsResponseError) return caught;
      throw caught;
    }
    throw new Error('expected a LocationsResponseError');
  }

  it('throws what the service would refuse, with its message and detail', () => {
    const bad = thrown(() => locationsResponse().location('bad id', { type: 'content', label: 'X' }).toJSON());
    expect(bad.code).toBe('invalid_structure');
    expect(bad.message).toBe(
      'the service would refuse this locations response: the app returned an invalid locations structure (/locations/bad id extid must be 1 to 128 letters, digits, underscores or dashes)',
    );
    expect(thrown(() => locationsResponse().group(' <br> ').toJSONText()).code).toBe('empty_group_label');
    expect(thrown(() => locationsResponse().location('x', { type: 'assessment', label: 'X', points: 0 }).toJSON()).detail).toBe(
      '/locations/x/points must be a number greater than 0',
    );
    expect(thrown(() => locationsResponse().location('x', { type: 'content', label: '' }).toPickerTree()).code).toBe('invalid_structure');
  });

  it('throws on a sixth level of groups', () => {
    const deep = (): unknown =>
      locationsResponse()
        .group('1', (a) => a.group('2', (b) => b.group('3', (c) => c.group('4', (d) => d.group('5', (e) => e.group('6'))))))
        .toJSON();
    expect(thrown(deep).code).toBe('nesting_too_deep');
    const five = (): unknown =>
      locationsResponse().group('1', (a) => a.group('2', (b) => b.group('3', (c) => c.group('4', (d) => d.group('5'))))).toJSON();
    expect(five).not.toThrow();
  });

  it('refuses a repeated extid in one map, which JSON cannot carry', () => {
    const builder = locationsResponse().location('x', { type: 'content', label: 'X' });
    expect(thrown(() => builder.location('x', { type: 'content', label: 'Again' })).code).toBe('builder_misuse');
    expect(() => locationsResponse().location('x', { type: 'content', label: 'X' }).group('G', (g) => g.location('x', { type: 'content', label: 'X' }))).not.toThrow();
  });

  it('refuses message and groups when pinned to 2026-08-25, where the service would ignore them', () => {
    const archived = locationsResponse({ contractVersion: '2026-08-25' });
    expect(thrown(() => archived.message('hi')).detail).toMatch(/not part of the 2026-08-25 locations response/);
    expect(thrown(() => archived.group('G')).detail).toMatch(/decision GAP-46/);
    expect(archived.location('x', { type: 'content', label: 'X' }).toJSON()).toEqual({ locations: { x: { type: 'content', label: 'X' } } });
  });
});
