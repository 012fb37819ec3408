/**
 * What a person would see as broken layout, measured in the page: the page scrolling sideways, an element
 * reaching past the right edge of the window, or an element clipping or scrolling its own content sideways
 * (a table cut off inside its box). Form fields are left out: they scroll their own text by design.
 */
import type { Page } from 'playwright-core';

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
      const field = ['INPUT', 'TEXTAREA', 'SELECT', 'OPTION'].includes(el.tagName);
      if (!field && ['auto', 'scroll', 'hidden', 'clip'].includes(style.overflowX) && el.scrollWidth > el.clientWidth + 1) {
        problems.push(`${describe(el)} cuts its content: ${el.scrollWidth}px of content in ${el.clientWidth}px`);
      }
    }
    return problems;
  });
}
