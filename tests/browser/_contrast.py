"""Measure, in the page, the WCAG 2.1 contrast of every visible text under some elements.

For each visible text node: its element's computed ``color`` (alpha and the ancestors' opacity
applied) over the background it is drawn on, found by walking up from the element and
compositing every non-transparent ``background-color`` until an opaque one (the page's white if
none). A ``<select>`` is measured by its own colours (its option text is drawn by the control).
Text of disabled controls is left out (WCAG 1.4.3 exempts inactive components), as are
visually-hidden texts (clipped to one pixel, for screen readers) and SVG tooltips.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["AA", "TextContrast", "measure", "worst"]

AA = 4.5  # WCAG 2.1 AA, normal text

MEASURE = r"""(selector) => {
  const parse = (c) => {
    const m = /rgba?\(([^)]+)\)/.exec(c || '');
    if (!m) return null;
    const p = m[1].split(/[\s,\/]+/).filter(Boolean).map(Number);
    return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
  };
  const over = (top, bottom) => [0, 1, 2].map((i) => top[i] * top[3] + bottom[i] * (1 - top[3])).concat([1]);
  const lin = (v) => { v /= 255; return v <= 0.04045 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
  const lum = (c) => 0.2126 * lin(c[0]) + 0.7152 * lin(c[1]) + 0.0722 * lin(c[2]);
  const background = (el) => {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c && c[3] > 0) { layers.push(c); if (c[3] >= 1) break; }
    }
    let bg = [255, 255, 255, 1];
    for (let i = layers.length - 1; i >= 0; i--) bg = over(layers[i], bg);
    return bg;
  };
  const opacity = (el) => { let o = 1; for (let e = el; e; e = e.parentElement) o *= Number(getComputedStyle(e).opacity); return o; };
  const hidden = (el) => {
    for (let e = el; e; e = e.parentElement) {
      const s = getComputedStyle(e);
      if (s.display === 'none' || s.visibility === 'hidden') return true;
      if (s.clip && s.clip.startsWith('rect(0') && e.getBoundingClientRect().width <= 1) return true;
    }
    return false;
  };
  const measureOne = (el, text) => {
    const s = getComputedStyle(el);
    const fg = parse(s.color);
    const bg = background(el);
    if (!fg) return {text, ratio: 0, color: s.color, background: String(bg), where: el.className};
    const shown = over([fg[0], fg[1], fg[2], fg[3] * opacity(el)], bg);
    const [a, b] = [lum(shown), lum(bg)].sort((x, y) => y - x);
    return {
      text: text.slice(0, 60), ratio: Math.round(((a + 0.05) / (b + 0.05)) * 100) / 100,
      color: s.color, background: 'rgb(' + bg.slice(0, 3).map(Math.round).join(',') + ')',
      where: (el.closest('[class]') || el).className.toString().slice(0, 80),
    };
  };
  const out = [];
  for (const root of document.querySelectorAll(selector)) {
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const text = node.textContent.trim();
      const el = node.parentElement;
      if (!text || !el || el.closest('style, script, title, option, svg')) continue;
      if (el.closest(':disabled, .mod-disabled, [aria-disabled="true"]')) continue;
      if (hidden(el)) continue;
      const range = document.createRange(); range.selectNodeContents(node);
      const box = range.getBoundingClientRect();
      if (box.width < 2 || box.height < 2) continue;
      out.push(measureOne(el, text));
    }
    for (const sel of root.querySelectorAll('select')) {
      if (!sel.disabled && !hidden(sel) && sel.value) out.push(measureOne(sel, sel.options[sel.selectedIndex].text));
    }
  }
  return out;
}"""


@dataclass(frozen=True)
class TextContrast:
    text: str
    ratio: float
    color: str
    background: str
    where: str


def measure(page_or_frame: Any, selector: str) -> list[TextContrast]:
    """Every visible text under ``selector`` with its contrast ratio."""
    return [TextContrast(**item) for item in page_or_frame.evaluate(MEASURE, selector)]


def worst(page_or_frame: Any, selector: str, at_least: int = 10) -> tuple[float, list[TextContrast]]:
    """``(lowest ratio, texts under AA)``; fails if fewer than ``at_least`` texts were found."""
    texts = measure(page_or_frame, selector)
    assert len(texts) >= at_least, f"only {len(texts)} texts under {selector!r}: {texts}"
    low = [t for t in texts if t.ratio < AA]
    return min(t.ratio for t in texts), low
