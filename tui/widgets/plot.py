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

        # Our own one-line legend: plotext's boxed legend would cover a small plot.
        fig = plt.figure
        fig.clear()
        fig.plot_size(width, height - 2)
        fig.theme("dark" if self.app.current_theme.dark else "default")
        fig.legend(False)
        legend = Text()
        for i, (name, points) in enumerate(self.series.items()):
            colour = PALETTE[i % len(PALETTE)]
            legend.append("■ ", style=colour).append(f"{name}  ")
            if points:
                xs, ys = zip(*points)
                pen = plt.marker(None, plt.pixel(foreground=colour))
                fig.draw(fig.signal(list(xs), list(ys), marker=pen).lines())
        head.truncate(width)
        legend.truncate(width)
        return head + Text("\n") + legend + Text("\n") + Text.from_ansi(fig.build().string())
