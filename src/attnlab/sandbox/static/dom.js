// Building the page's elements. ``el(tag, attrs, ...children)``: ``attrs`` sets the class ("class"), data
// attributes ("data-…") and properties (anything else); children are nodes or strings, which become text nodes
// (nothing is parsed as HTML; null and undefined become empty text).
export const el = (tag, attrs = {}, ...children) => {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else if (k.startsWith("data-")) node.setAttribute(k, v);
    else node[k] = v;
  }
  node.append(...children.map((c) => (c instanceof Node ? c : String(c ?? ""))));
  return node;
};

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
