/**
 * Names that must fit Kubernetes' 63-character limit (a label's name part or value, a Job's or a
 * volume's name), made as SUC makes them (wrangler's SafeConcatName), so nuo's match SUC's where both
 * exist: the parts joined by '-'; when that is longer than 63 characters, its first 57 and 5 of its
 * sha256 in hex, or, when the 57th is not a lower-case letter or digit, its first 56 and 6 of the digest.
 * The same parts give the same name; names that differ only past the cut differ in the digest.
 */
import { createHash } from 'node:crypto';

const MAX_NAME = 63;

export function safeConcatName(...parts: string[]): string {
  const full = parts.join('-');
  if (full.length <= MAX_NAME) return full;
  const digest = createHash('sha256').update(full).digest('hex');
  const keep = /[a-z0-9]/.test(full[56] ?? '') ? 57 : 56;
  return `${full.slice(0, keep)}-${digest.slice(0, MAX_NAME - keep - 1)}`;
}
