import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { WORKER_ROLES } from '../workers/worker-runtime.js';

const ROOT = path.resolve(import.meta.dirname, '..');

/** The pages a reader of the repository reads: the README, the guide and the benchmarks' figures. */
async function pages(): Promise<string[]> {
  const docs = (await readdir(path.join(ROOT, 'docs'))).filter((name) => name.endsWith('.md')).map((name) => path.join('docs', name));
  return ['README.md', ...docs, path.join('bench', 'README.md')];
}

/** Markdown links and images `[text](target)` and `![alt](target)`, outside code blocks and code spans. */
function linkTargets(markdown: string): string[] {
  const prose = markdown.replace(/^```[\s\S]*?^```$/gm, '').replace(/`[^`\n]*`/g, '');
  return [...prose.matchAll(/!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((match) => match[1]!);
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function anchors(markdown: string): Set<string> {
  const prose = markdown.replace(/^```[\s\S]*?^```$/gm, '');
  return new Set([...prose.matchAll(/^#{1,6}\s+(.+)$/gm)].map((match) => anchorOf(match[1]!)));
}

describe('links in README.md, docs/ and bench/README.md', () => {
  it('point to files of this repository, and to headings that exist', async () => {
    const broken: string[] = [];
    for (const page of await pages()) {
      const markdown = await readFile(path.join(ROOT, page), 'utf8');
      for (const target of linkTargets(markdown)) {
        if (/^[a-z]+:/i.test(target)) {
          broken.push(`${page}: ${target} (leads outside the repository)`);
          continue;
        }
        const [file, anchor] = target.split('#') as [string, string | undefined];
        const resolved = file === '' ? path.join(ROOT, page) : path.resolve(ROOT, path.dirname(page), decodeURIComponent(file));
        if (!resolved.startsWith(`${ROOT}${path.sep}`) || !existsSync(resolved)) {
          broken.push(`${page}: ${target} (no such file in the repository)`);
          continue;
        }
        if (anchor && resolved.endsWith('.md') && !anchors(await readFile(resolved, 'utf8')).has(anchor)) {
          broken.push(`${page}: ${target} (no such heading)`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it('never lead to another site, not even as a bare address', async () => {
    for (const page of await pages()) {
      const prose = (await readFile(path.join(ROOT, page), 'utf8')).replace(/^```[\s\S]*?^```$/gm, '').replace(/`[^`\n]*`/g, '');
      expect(prose.match(/<?https?:\/\/[^\s)>]+/g) ?? [], page).toEqual([]);
    }
  });

  it('never point to ../shared, which a clone does not have', async () => {
    for (const page of await pages()) {
      const markdown = await readFile(path.join(ROOT, page), 'utf8');
      expect(markdown, page).not.toMatch(/\.\.\/shared|\/work\/shared/);
    }
  });
});

describe('docs/operations.md', () => {
  it('lists every role a worker process can run, as WORKER_QUEUES names them', async () => {
    const operations = await readFile(path.join(ROOT, 'docs', 'operations.md'), 'utf8');
    const processes = operations.slice(
      operations.indexOf('## Processes'),
      operations.indexOf('\n## ', operations.indexOf('## Processes') + 1),
    );
    const listed = [...processes.matchAll(/^\| `([a-z-]+)` +\|/gm)].map((match) => match[1]!);
    expect(listed.filter((role) => !['release', 'web', 'worker'].includes(role)).sort()).toEqual([...WORKER_ROLES].sort());
  });
});
