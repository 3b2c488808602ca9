import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { markdownAnchor } from './markdown-anchor.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const docs = readdirSync(join(root, 'docs'))
  .filter((name) => name.endsWith('.md'))
  .map((name) => join(root, 'docs', name));
const pages = [join(root, 'README.md'), ...docs];

/** Markdown text outside fenced code blocks. */
function prose(text: string): string {
  return text.replace(/^```[\s\S]*?^```/gm, '');
}

function anchorsOf(file: string): Set<string> {
  const headings = [...prose(readFileSync(file, 'utf8')).matchAll(/^#{1,6} (.+)$/gm)];
  return new Set(headings.map((m) => markdownAnchor(m[1] ?? '')));
}

/** Every relative link of a page: [text](target) outside code, not a URL. */
function linksOf(file: string): string[] {
  const links = [...prose(readFileSync(file, 'utf8')).matchAll(/\]\(([^)\s]+)\)/g)];
  return links.map((m) => m[1] ?? '').filter((target) => !/^[a-z]+:/i.test(target));
}

describe('the documentation', () => {
  it.each(pages.map((page) => [relative(root, page), page]))(
    '%s: every relative link names a file and a heading that exist',
    (_name, page) => {
      for (const target of linksOf(page)) {
        const [path = '', anchor] = target.split('#');
        const file = path === '' ? page : join(dirname(page), decodeURI(path));
        expect(existsSync(file), `${target}: no such file`).toBe(true);
        if (anchor !== undefined && statSync(file).isFile() && file.endsWith('.md')) {
          expect([...anchorsOf(file)], `${target}: no such heading`).toContain(anchor);
        }
      }
    },
  );

  it('the README lists every page of docs/', () => {
    const linked = new Set(linksOf(join(root, 'README.md')).map((t) => t.split('#')[0]));
    for (const page of docs) expect([...linked], 'README.md').toContain(relative(root, page));
  });
});
