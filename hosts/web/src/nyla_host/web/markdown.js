// Markdown of answers, rendered into DOM nodes: text only ever becomes a text node, so no
// tag, attribute or script of an answer reaches the page. Headings, lists, tables, quotes,
// fenced and inline code, bold, italics, and links (http, https or relative; they open in a
// new tab with rel=noopener).

const INLINE = /(`+)([^`]+?)\1|\*\*([^*]+)\*\*|__([^_]+)__|\*([^*\s][^*]*)\*|\[([^\]]+)\]\(([^)\s]+)(?:\s+"[^"]*")?\)|(https?:\/\/[^\s<>()]+[^\s<>().,;:!?'"])/g;

/** A link target the page follows: http(s), or a path on this page's own origin; anything
 * else (javascript:, data:, a protocol-relative //host, /\\host) is refused. Judged on the URL
 * the browser would resolve, so tricks its parser undoes (tabs, backslashes) do not pass. */
export function safeHref(href) {
  const value = href.trim();
  let url;
  try {
    url = new URL(value, location.href);
  } catch {
    return null;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return null;
  if (!/^https?:\/\//i.test(value) && url.origin !== location.origin) return null;
  return value;
}

export function link(href, text) {
  const safe = safeHref(href);
  if (safe === null) return document.createTextNode(text);
  const a = document.createElement("a");
  a.href = safe;
  a.textContent = text;
  a.target = "_blank";
  a.rel = "noopener noreferrer";
  return a;
}

function wrap(tag, children) {
  const node = document.createElement(tag);
  node.append(...children);
  return node;
}

export function inline(text) {
  const out = [];
  let last = 0;
  for (const m of text.matchAll(INLINE)) {
    if (m.index > last) out.push(document.createTextNode(text.slice(last, m.index)));
    if (m[2] !== undefined) out.push(wrap("code", [m[2]]));
    else if (m[3] !== undefined || m[4] !== undefined) out.push(wrap("strong", inline(m[3] ?? m[4])));
    else if (m[5] !== undefined) out.push(wrap("em", inline(m[5])));
    else if (m[6] !== undefined) out.push(link(m[7], m[6]));
    else out.push(link(m[8], m[8]));
    last = m.index + m[0].length;
  }
  if (last < text.length) out.push(document.createTextNode(text.slice(last)));
  return out;
}

const cells = (line) => line.trim().replace(/^\|/, "").replace(/\|$/, "").split("|").map((c) => c.trim());
const isRule = (line) => /^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$/.test(line);

function table(lines) {
  const head = cells(lines[0]);
  const align = cells(lines[1]).map((c) => (c.endsWith(":") ? (c.startsWith(":") ? "center" : "right") : null));
  const row = (values, tag) => wrap("tr", head.map((_, i) => {
    const cell = wrap(tag, inline(values[i] || ""));
    if (align[i]) cell.style.textAlign = align[i];
    return cell;
  }));
  const body = lines.slice(2).map((line) => row(cells(line), "td"));
  const node = wrap("table", [wrap("thead", [row(head, "th")]), wrap("tbody", body)]);
  return wrap("div", [node]);
}

/** The Markdown `text` as a DocumentFragment. */
export function render(text) {
  const fragment = document.createDocumentFragment();
  const lines = String(text || "").replace(/\r/g, "").split("\n");
  let list = null;
  const closeList = () => { list = null; };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const fence = line.match(/^\s*(```|~~~)\s*([\w+-]*)\s*$/);
    if (fence) {
      closeList();
      const body = [];
      for (i++; i < lines.length && !lines[i].trim().startsWith(fence[1]); i++) body.push(lines[i]);
      const code = wrap("code", [body.join("\n")]);
      if (fence[2]) code.dataset.lang = fence[2];
      fragment.append(wrap("pre", [code]));
      continue;
    }
    if (line.includes("|") && i + 1 < lines.length && isRule(lines[i + 1])) {
      closeList();
      const rows = [line, lines[i + 1]];
      for (i += 2; i < lines.length && lines[i].includes("|") && lines[i].trim(); i++) rows.push(lines[i]);
      i--;
      const box = table(rows);
      box.className = "table-box";
      fragment.append(box);
      continue;
    }
    const heading = line.match(/^(#{1,6})\s+(.*)$/);
    const item = line.match(/^\s*(?:([-*+])|(\d+)[.)])\s+(.*)$/);
    const quote = line.match(/^>\s?(.*)$/);
    if (heading) {
      closeList();
      fragment.append(wrap(`h${Math.min(6, heading[1].length + 2)}`, inline(heading[2])));
    } else if (item) {
      const kind = item[2] ? "ol" : "ul";
      if (!list || list.localName !== kind) {
        list = document.createElement(kind);
        if (item[2] && item[2] !== "1") list.start = Number(item[2]);
        fragment.append(list);
      }
      list.append(wrap("li", inline(item[3])));
    } else if (quote) {
      closeList();
      fragment.append(wrap("blockquote", inline(quote[1])));
    } else if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) {
      closeList();
      fragment.append(document.createElement("hr"));
    } else if (line.trim()) {
      closeList();
      fragment.append(wrap("p", inline(line)));
    } else closeList();
  }
  return fragment;
}
