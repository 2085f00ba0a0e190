/**
 * Whether text shows anything: a character that is neither white space nor an invisible format
 * character (zero-width space, joiner and non-joiner, word joiner, byte-order mark, soft hyphen,
 * bidirectional marks: Unicode category Cf). Text made only of those is blank: a title or a
 * comment of zero-width spaces would show as nothing in every list and notification.
 */
export const hasVisibleText = (text: string): boolean => /[^\s\p{Cf}]/u.test(text);
