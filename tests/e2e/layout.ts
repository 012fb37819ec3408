/**
 * What a person would see as broken layout, measured in the page: the page scrolling sideways, an element
 * reaching past the right edge of the window, an element clipping or scrolling its own content sideways
 * (a table cut off inside its box), or a select too narrow for the option it shows. Text fields are left
 * out: they scroll their own text by design. And what axe-core finds serious or critical for accessibility.
 */
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';

const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

/** axe-core's serious and critical violations on the page as it is now, one line each. */
export async function accessibilityProblems(page: Page): Promise<string[]> {
  if (!(await page.evaluate(() => 'axe' in window))) await page.addScriptTag({ path: AXE });
  return page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run(context: Document, options: object): Promise<{ violations: Array<{ id: string; impact: string | null; help: string; nodes: Array<{ target: unknown[] }> }> }> } }).axe;
    const { violations } = await axe.run(document, { resultTypes: ['violations'] });
    return violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.impact} ${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`);
  });
}

export async function overflowProblems(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const width = document.documentElement.clientWidth;
    const problems: string[] = [];
    if (document.documentElement.scrollWidth > width) {
      problems.push(`the page scrolls sideways: ${document.documentElement.scrollWidth}px wide in a ${width}px window`);
    }
    const describe = (el: Element): string => {
      const id = el.id ? `#${el.id}` : '';
      const classes = el.classList.length > 0 ? `.${el.className.trim().split(/\s+/).join('.')}` : '';
      const text = (el.textContent ?? '').trim().slice(0, 40);
      return `<${el.tagName.toLowerCase()}${id}${classes}> "${text}"`;
    };
    const all = document.querySelectorAll('body *');
    for (let i = 0; i < all.length; i += 1) {
      const el = all.item(i);
      const style = getComputedStyle(el);
      if (style.display === 'none' || style.visibility === 'hidden' || el.classList.contains('offscreen')) continue;
      const rect = el.getBoundingClientRect();
      if (rect.width === 0 && rect.height === 0) continue;
      if (rect.right > width + 0.5) problems.push(`${describe(el)} reaches ${Math.round(rect.right)}px, past the ${width}px window`);
      if (el instanceof HTMLSelectElement && el.selectedIndex >= 0) {
        // The shown option's text against the box: padding, border and the arrow (about 20 px) take the rest.
        const option = el.options[el.selectedIndex]!;
        const context = document.createElement('canvas').getContext('2d')!;
        context.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
        const needed = context.measureText(option.text).width + parseFloat(style.paddingLeft) + parseFloat(style.paddingRight) + 20;
        if (needed > rect.width + 1) problems.push(`${describe(el)} shows "${option.text}" clipped: it needs ${Math.ceil(needed)}px, has ${Math.round(rect.width)}px`);
      }
      const field = ['INPUT', 'TEXTAREA', 'SELECT', 'OPTION'].includes(el.tagName);
      if (!field && ['auto', 'scroll', 'hidden', 'clip'].includes(style.overflowX) && el.scrollWidth > el.clientWidth + 1) {
        problems.push(`${describe(el)} cuts its content: ${el.scrollWidth}px of content in ${el.clientWidth}px`);
      }
    }
    return problems;
  });
}
