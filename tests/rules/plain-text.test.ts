import { describe, expect, it } from 'vitest';
import { decodeEntities, reduceMessage, reduceToPlainText, truncateCodePoints } from '../../rules/plain-text.js';

describe('reduceToPlainText (labels and descriptions, decision GAP-10)', () => {
  it.each([
    ['<b>Quiz</b> 1', 'Quiz 1'],
    ['  Week\t\n 1  ', 'Week 1'],
    ['Tom &amp; Jerry', 'Tom & Jerry'],
    ['&lt;b&gt;not a tag&lt;/b&gt;', '<b>not a tag</b>'],
    ['&quot;x&quot; &apos;y&apos;', '"x" \'y\''],
    ['a&nbsp;&nbsp;b', 'a b'],
    ['&#65;&#x42;&#X43;', 'ABC'],
    ['&#x1F600;', '\u{1F600}'],
    ['&#0;&#xD800;&#x110000;', '\ufffd\ufffd\ufffd'],
    ['&unknown; &amp', '&unknown; &amp'],
    ['a < b and c > d', 'a < b and c > d'],
    ['1 <2', '1 <2'],
    ['<a title="x>y" href=\'z\'>link</a>', 'link'],
    ['Line<br>break', 'Line break'],
    ['<p>One</p><p>Two</p>', 'One Two'],
    ['<!-- hidden -->shown', 'shown'],
    ['<script>alert(1)</script>Safe', 'Safe'],
    ['<STYLE>p{}</style>Safe', 'Safe'],
    ['<!DOCTYPE html><?xml version="1.0"?>Doc', 'Doc'],
    ['Trailing <b', 'Trailing'],
    ['ctrl\u0001\u007fchars\u0085', 'ctrlchars'],
  ])('%j reduces to %j', (input, expected) => {
    expect(reduceToPlainText(input, 200)).toBe(expected);
  });

  it('is empty for white space, markup or entity-encoded white space only', () => {
    for (const input of ['', '   ', '<b></b>', '<br/>', '&nbsp;', '<p> &#32; </p>', '<!-- -->']) {
      expect(reduceToPlainText(input, 200)).toBe('');
    }
  });

  it('truncates after reduction, counting code points', () => {
    const markup = `<b>${'x'.repeat(199)}</b>é`;
    expect(reduceToPlainText(markup, 200)).toBe(`${'x'.repeat(199)}é`);
    const emoji = '\u{1F600}'.repeat(250);
    const cut = reduceToPlainText(emoji, 200);
    expect(Array.from(cut)).toHaveLength(200);
    expect(cut.length).toBe(400);
    expect(reduceToPlainText(`${'&amp;'.repeat(250)}`, 200)).toBe('&'.repeat(200));
  });

  it('does not leave trailing white space at the cut', () => {
    expect(reduceToPlainText(`${'a'.repeat(199)} b`, 200)).toBe('a'.repeat(199));
  });
});

describe('reduceMessage (the picker message, decision GAP-10)', () => {
  it('turns line-break tags and block ends into line breaks', () => {
    expect(reduceMessage('One<br>Two<br/>Three<BR />Four', 2000)).toBe('One\nTwo\nThree\nFour');
    expect(reduceMessage('<p>Para 1</p><p>Para 2</p><div>Div</div><ul><li>a</li><li>b</li></ul>', 2000)).toBe('Para 1\nPara 2\nDiv\na\nb');
  });

  it('keeps the newlines of plain text and collapses runs of spaces', () => {
    expect(reduceMessage('Hello   there\r\n  second\tline  \n\nthird', 2000)).toBe('Hello there\nsecond line\n\nthird');
  });

  it('collapses more than one blank line to one and trims the ends', () => {
    expect(reduceMessage('\n\n a \n\n\n\n b \n\n', 2000)).toBe('a\n\nb');
  });

  it('strips other markup and decodes entities', () => {
    expect(reduceMessage('<b>Note:</b> 5 &lt; 6 &amp; <i>done</i>', 2000)).toBe('Note: 5 < 6 & done');
  });

  it('cuts at 2000 code points', () => {
    const cut = reduceMessage('\u{1F600}'.repeat(2500), 2000);
    expect(Array.from(cut)).toHaveLength(2000);
  });
});

describe('helpers', () => {
  it('truncateCodePoints never splits a surrogate pair', () => {
    expect(truncateCodePoints('a\u{1F600}b', 2)).toBe('a\u{1F600}');
    expect(truncateCodePoints('abc', 5)).toBe('abc');
  });
  it('decodeEntities decodes the named set case-sensitively', () => {
    expect(decodeEntities('&AMP;&Amp;&hellip;&mdash;')).toBe('&&Amp;\u2026\u2014');
  });
});
