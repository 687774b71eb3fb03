"""The one stylesheet of every tfgraph_lab rendering: the report, the labs, the live view, notices.

Every rule is scoped under the root class ``tfgl`` (each rendering's outermost element has it),
so the report and a lab on one page share one set of rules and override nothing of the page's.
Colours come from the host's theme variables, with fallbacks, in this order: JupyterLab
(``--jp-*``: Light, Dark and any theme that sets them; Notebook 7 and Voila use the same), VS Code
(``--vscode-*``, which its notebook outputs expose), then a light palette. Text is only ever
drawn in the theme's foreground (or its secondary foreground on the page's own background), never
in an accent colour: accents mark borders and faint tints, so every text keeps the theme's own
contrast (WCAG 2.1 AA, 4.5:1; checked in a real browser by ``tests/browser``).

The markup must read without this stylesheet too (a sanitizer drops ``<style>``): nothing here
hides or reorders meaning, it only lays out. Pure strings; imports nothing of the package.
"""

from __future__ import annotations

import re

__all__ = ["ROOT", "STYLESHEET", "style_tag"]

#: The class every rendering's outermost element carries (with its own: ``tfgl-report``, …).
ROOT = "tfgl"

# Accent colours mark borders, bars and tints only; none is ever a text colour.
STYLESHEET = """
.tfgl{
 --tfgl-fg:var(--jp-content-font-color1,var(--vscode-editor-foreground,#1f2328));
 --tfgl-muted:var(--jp-content-font-color2,var(--vscode-descriptionForeground,#57606a));
 --tfgl-bg:var(--jp-layout-color0,var(--vscode-editor-background,#ffffff));
 --tfgl-panel:var(--jp-layout-color1,var(--vscode-editorWidget-background,#f6f8fa));
 --tfgl-line:var(--jp-border-color2,var(--vscode-editorWidget-border,#d0d7de));
 --tfgl-orange:#e16f24;--tfgl-green:#2da44e;--tfgl-blue:#218bff;--tfgl-red:#e5534b;--tfgl-grey:#8c959f;
 --tfgl-orange-tint:rgba(225,111,36,.13);--tfgl-green-tint:rgba(45,164,78,.13);
 --tfgl-red-tint:rgba(229,83,75,.13);--tfgl-yellow-tint:rgba(212,167,44,.16);
 color:var(--tfgl-fg);background:var(--tfgl-bg);
 font-family:system-ui,-apple-system,'Segoe UI',sans-serif;font-size:13px;line-height:1.4}
.tfgl.tfgl-report{max-width:980px;padding:2px 0}
.tfgl code,.tfgl pre{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12px;color:inherit}
.tfgl h4{margin:14px 0 4px;font-size:14px;color:var(--tfgl-fg)}
.tfgl .tfgl-muted{color:var(--tfgl-muted)}
.tfgl .tfgl-sep,.tfgl .tfgl-sr{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
.tfgl .tfgl-stats{display:flex;gap:8px;flex-wrap:wrap;margin:4px 0 8px}
.tfgl .tfgl-stat{display:inline-block;background:var(--tfgl-panel);border:1px solid var(--tfgl-line);
 border-radius:8px;padding:5px 12px;min-width:80px}
.tfgl .tfgl-stat .tfgl-value{display:block;font-size:21px;line-height:1.15;font-weight:600;
 font-variant-numeric:tabular-nums}
.tfgl .tfgl-stat small{display:block;font-size:11px}
.tfgl .tfgl-stat.tfgl-bad{background:var(--tfgl-orange-tint);border-color:var(--tfgl-orange)}
.tfgl .tfgl-stat.tfgl-big{background:var(--tfgl-orange-tint);border-color:var(--tfgl-orange);min-width:120px}
.tfgl .tfgl-stat.tfgl-big .tfgl-value{font-size:38px}
.tfgl .tfgl-summary{margin-bottom:6px}
.tfgl .tfgl-notice{background:var(--tfgl-yellow-tint);border:1px solid #d4a72c;border-radius:6px;
 padding:6px 10px;margin:6px 0}
.tfgl table{border-collapse:collapse;margin:4px 0;color:var(--tfgl-fg);font-size:13px;table-layout:auto}
/* Doubled class: beats JupyterLab 4's `.jp-ThemedContainer .jp-RenderedHTMLCommon pre` (no
   padding, border or background) and its `:not(.jp-RenderedMarkdown).jp-RenderedHTMLCommon td` (0,2,1), which right-aligns every cell,
   and its striped/hovered rows (`tbody tr:nth-child(even)`, 0,2,2: `:nth-child(n)` outweighs it). */
.tfgl.tfgl tr,.tfgl.tfgl tbody tr:nth-child(n),.tfgl.tfgl tbody tr:hover{background:transparent}
.tfgl.tfgl th,.tfgl.tfgl td{padding:3px 10px;border-bottom:1px solid var(--tfgl-line);
 text-align:left;vertical-align:top;background:transparent;line-height:1.4}
.tfgl.tfgl td.tfgl-num,.tfgl.tfgl th.tfgl-num{text-align:right;font-variant-numeric:tabular-nums}
.tfgl.tfgl tr.tfgl-hit td{background:rgba(33,139,255,.12)}
.tfgl.tfgl tr.tfgl-new td{background:var(--tfgl-orange-tint)}
.tfgl .tfgl-table{width:100%}
.tfgl.tfgl-trial{max-width:680px}
.tfgl .tfgl-table code{word-break:break-word}
.tfgl td.tfgl-retraced{font-weight:600;box-shadow:inset 3px 0 0 var(--tfgl-orange)}
.tfgl .tfgl-function{border-left:3px solid var(--tfgl-line);padding:2px 0 2px 10px;margin:10px 0}
.tfgl .tfgl-function.tfgl-has-retraces{border-left-color:var(--tfgl-orange)}
.tfgl .tfgl-reason-box,.tfgl .tfgl-chart-box,.tfgl .tfgl-stat,.tfgl .tfgl-snapshot-note{line-height:1.4}
.tfgl .tfgl-reason-box{margin:4px 0;padding:6px 8px;background:var(--tfgl-panel);border-radius:6px;
 border-left:3px solid var(--tfgl-grey)}
.tfgl .tfgl-reason-box.tfgl-retrace{border-left-color:var(--tfgl-orange)}
.tfgl .tfgl-reason-box.tfgl-error{border-left-color:var(--tfgl-red);background:var(--tfgl-red-tint)}
.tfgl .tfgl-reason-box.tfgl-ok{border-left-color:var(--tfgl-green);background:var(--tfgl-green-tint)}
.tfgl a.tfgl-code-page{color:inherit;text-decoration:none}
.tfgl .tfgl-code{display:inline-block;font-weight:600;border-radius:10px;padding:0 8px;
 border:1px solid var(--tfgl-blue);margin-right:4px}
.tfgl .tfgl-reason-first-trace .tfgl-code,.tfgl .tfgl-reason-variable-creation .tfgl-code{border-color:var(--tfgl-grey)}
.tfgl .tfgl-fix{margin-top:2px;padding-left:6px;border-left:3px solid var(--tfgl-green)}
.tfgl .tfgl-fix b{font-weight:600}
.tfgl.tfgl .tfgl-suggestion{background:var(--tfgl-green-tint);border:1px solid var(--tfgl-green);border-radius:6px;
 padding:6px 10px;margin:4px 0;white-space:pre-wrap;color:var(--tfgl-fg)}
.tfgl .tfgl-chart-box{margin:6px 0}
.tfgl .tfgl-chart{display:block;max-width:100%;height:auto}
.tfgl .tfgl-key{display:inline-block;width:10px;height:10px;border-radius:2px;margin:0 3px 0 6px;vertical-align:-1px}
.tfgl .tfgl-key-traced{background:var(--tfgl-orange)}
.tfgl .tfgl-key-cached{background:var(--tfgl-grey)}
.tfgl .tfgl-key-failed{background:var(--tfgl-red)}
.tfgl details>summary{cursor:pointer;margin:8px 0}
.tfgl .tfgl-lab-title{font-size:16px;font-weight:600;margin:0 0 2px}
.tfgl .tfgl-lab-sub{margin:0 0 6px}
.tfgl .tfgl-section{font-weight:600;text-transform:uppercase;font-size:11px;letter-spacing:.04em;margin:8px 0 2px}
.tfgl.tfgl .tfgl-code-block pre{background:var(--tfgl-panel);border:1px solid var(--tfgl-line);border-radius:6px;
 padding:8px;margin:2px 0;white-space:pre;overflow-x:auto;line-height:1.35;color:var(--tfgl-fg)}
.tfgl .tfgl-verdict-right,.tfgl .tfgl-verdict-miss{font-weight:600}
.tfgl .tfgl-call-button{font-weight:600}
.tfgl .tfgl-control-label{display:block;text-align:right;padding-right:8px;color:var(--tfgl-fg)}
.tfgl .tfgl-monitor-notice{border-left:4px solid var(--tfgl-orange);background:var(--tfgl-orange-tint);
 padding:4px 10px}
.tfgl .tfgl-monitor-notice ul{margin:2px 0}
.tfgl .jupyter-button:focus-visible,.tfgl select:focus-visible,.tfgl input:focus-visible,
.tfgl .noUi-handle:focus-visible,.tfgl .widget-readout:focus-visible{outline:2px solid var(--tfgl-blue);outline-offset:1px}
"""


def _minified(css: str) -> str:
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
    return "".join(line.strip() for line in css.splitlines())


_TAG = f"<style>{_minified(STYLESHEET)}</style>"


def style_tag() -> str:
    """The stylesheet as a ``<style>`` element, comments and indentation left out (it ships
    with every output)."""
    return _TAG
