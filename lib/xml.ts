/** XML text and attribute escaping: the one escape of text written into XML or SVG documents (WMTS capabilities, static map labels). */
export function xmlEscape(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&apos;');
}
