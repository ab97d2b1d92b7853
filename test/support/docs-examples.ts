import { readFileSync } from 'node:fs';

/** One shell command of a guide's example: its text as written, and the status the guide shows for it. */
export interface DocCommand {
  file: string;
  /** Line of the command in its file, 1-based. */
  line: number;
  text: string;
  /** The HTTP status the guide shows for a curl command; null when it shows none. */
  status: number | null;
}

const FENCE = /^```(\w*)\s*$/;
const SHELL = new Set(['sh', 'bash', 'shell']);

/** Whether `text` leaves a single-quoted or double-quoted string open, so the command goes on on the next line. */
function opensQuote(text: string): boolean {
  let quote: string | null = null;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quote === null) {
      if (c === '#' && (i === 0 || /\s/.test(text[i - 1]!))) break;
      if (c === '\\') i++;
      else if (c === "'" || c === '"') quote = c;
    } else if (c === quote) quote = null;
    else if (c === '\\' && quote === '"') i++;
  }
  return quote !== null;
}

/** The status a comment shows: `# HTTP/1.1 405 …`, `# 201 {…}`, `# 204: revoked`. */
function statusIn(comment: string): number | null {
  const match = /^#\s*(?:HTTP\/[\d.]+\s+)?([1-5]\d\d)\b/.exec(comment.trim());
  return match ? Number(match[1]) : null;
}

/** The comment that ends a command (outside quotes, on its last line), if any. */
function trailingComment(text: string): string | null {
  let quote: string | null = null;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quote === null) {
      if (c === '#' && i > 0 && /\s/.test(text[i - 1]!)) return text.slice(i).includes('\n') ? null : text.slice(i);
      if (c === '\\') i++;
      else if (c === "'" || c === '"') quote = c;
    } else if (c === quote) quote = null;
  }
  return null;
}

/**
 * The shell commands of every `sh`/`bash` block of a Markdown file that holds a curl command, in
 * order. The convention the guide follows (docs/development.md, "The guide's examples"): each curl
 * command is followed by the status it answers, in a comment on its last line (`# 204: revoked`)
 * or on the lines after it (`# 201 {…}`, `# HTTP/1.1 405 Method Not Allowed`), or, when it is the
 * block's only curl command, in the first bold status (`**200**`) of the prose after the block.
 */
export function docCommands(file: string): DocCommand[] {
  const lines = readFileSync(file, 'utf8').split('\n');
  const commands: DocCommand[] = [];
  for (let i = 0; i < lines.length; i++) {
    const fence = FENCE.exec(lines[i]!);
    if (!fence) continue;
    const end = lines.findIndex((line, index) => index > i && FENCE.test(line));
    if (!SHELL.has(fence[1]!)) {
      i = end;
      continue;
    }
    const block: DocCommand[] = [];
    let current: { line: number; text: string[] } | null = null;
    for (let j = i + 1; j < end; j++) {
      const line = lines[j]!;
      if (current) {
        current.text.push(line);
      } else if (line.trim() === '' || line.trim().startsWith('#')) {
        const last = block.at(-1);
        if (last && last.status === null && line.trim().startsWith('#')) last.status = statusIn(line);
        continue;
      } else {
        current = { line: j + 1, text: [line] };
      }
      const text = current.text.join('\n');
      if (line.endsWith('\\') || opensQuote(text)) continue;
      const comment = trailingComment(text);
      block.push({ file, line: current.line, text, status: comment ? statusIn(comment) : null });
      current = null;
    }
    const curls = block.filter((command) => /\bcurl\b/.test(command.text));
    if (curls.length === 1 && curls[0]!.status === null) {
      const next = lines.findIndex((line, index) => index > end && FENCE.test(line));
      const prose = lines.slice(end + 1, next === -1 ? undefined : next).join('\n');
      const bold = /\*\*([1-5]\d\d)\*\*/.exec(prose);
      if (bold) curls[0]!.status = Number(bold[1]);
    }
    if (curls.length > 0) commands.push(...block);
    i = end;
  }
  return commands;
}
