// MathJax 3 for the maths of the pages: pymdownx.arithmatex (generic) wraps $…$ and $$…$$ in spans of class
// "arithmatex" holding \(…\) and \[…\]; MathJax typesets only those. The library itself is served from the site
// (assets/mathjax/, copied at build time by docs/hooks.py from the pinned django-static-mathjax package): the
// site loads nothing from the network.
window.MathJax = {
  tex: {inlineMath: [["\\(", "\\)"]], displayMath: [["\\[", "\\]"]], processEscapes: true,
        processEnvironments: true},
  options: {ignoreHtmlClass: ".*|", processHtmlClass: "arithmatex"},
};
// MathJax typesets each page when it loads. (mkdocs.yml does not turn on Material's instant navigation; with it,
// a swapped-in page would need MathJax.typesetPromise() on document$ — without clearing the output's cache, which
// drops the glyphs' styles of the page already typeset.)
