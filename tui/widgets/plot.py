"""Live line charts drawn with plotext (6.x API), re-rendered to the widget's size.

plotext keeps one global figure, so charts are built on the event loop thread only (in
`render`), never from a worker.
"""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget

PALETTE = ("green", "magenta", "cyan", "yellow", "red", "blue")  # ANSI names: rich = plotext


class PlotView(Widget):
    """Named series of (x, y) points, drawn as lines with a legend."""

    DEFAULT_CSS = """
    PlotView { height: 1fr; min-height: 6; }
    """

    def __init__(self, title: str, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.title = title
        self.series: dict[str, list[tuple[float, float]]] = {}

    def add_point(self, name: str, x: float, y: float) -> None:
        self.series.setdefault(name, []).append((float(x), float(y)))
        self.refresh()

    def clear(self) -> None:
        self.series.clear()
        self.refresh()

    def render(self) -> Text:
        width, height = self.size
        if width < 12 or height < 5:
            return Text("")
        head = Text(self.title, style="bold")
        if not any(self.series.values()):
            return head + Text("\n\n(no data yet)", style="dim")
        import plotext as plt

        # Our own legend, wrapped over as many lines as it needs: plotext's boxed legend
        # would cover a small plot.
        fig = plt.figure
        fig.clear()
        fig.theme("dark" if self.app.current_theme.dark else "default")
        fig.legend(False)
        lines = [Text()]
        for i, (name, points) in enumerate(self.series.items()):
            colour = PALETTE[i % len(PALETTE)]
            entry = Text("■ ", style=colour).append(f"{name}  ")
            if lines[-1].cell_len and lines[-1].cell_len + entry.cell_len > width:
                lines.append(Text())
            lines[-1].append_text(entry)
            if points:
                xs, ys = zip(*points)
                pen = plt.marker(None, plt.pixel(foreground=colour))
                fig.draw(fig.signal(list(xs), list(ys), marker=pen).lines())
        fig.plot_size(width, max(height - 1 - len(lines), 3))
        head.truncate(width)
        return Text("\n").join([head, *lines, Text.from_ansi(fig.build().string())])
