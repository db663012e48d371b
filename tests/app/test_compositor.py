"""The main screen's compositor skips the full layouts Textual repeats for nothing after a scroll."""

from __future__ import annotations

from typing import Any

import pytest
from textual import errors
from textual._compositor import Compositor
from textual.app import App, ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Static

from turnstone_tui.app.app import TurnstoneApp
from turnstone_tui.app.compositor import LayoutCompositor


class TallScreen(Screen[None]):
    def __init__(self, compositor: Compositor) -> None:
        super().__init__()
        self._compositor = compositor

    def compose(self) -> ComposeResult:
        yield VerticalScroll(*[Static(f"line {n}") for n in range(200)], id="scroll")


class TitledBox(Vertical):
    """Updates its child on mount, as a tool card sets its title: the child is mounted by then,
    not laid out."""

    def compose(self) -> ComposeResult:
        yield Static("", id="title")

    def on_mount(self) -> None:
        self.query_one("#title", Static).update("a title")


class TallApp(App[None]):
    def __init__(self, compositor: Compositor) -> None:
        super().__init__()
        self.compositor = compositor

    def get_default_screen(self) -> Screen[None]:
        return TallScreen(self.compositor)


def count_full_arranges(compositor: Compositor, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Each layout ("reflow") and each arrangement of the whole screen (not only what is visible),
    in a layout or outside one."""
    calls: list[str] = []
    real_arrange, real_reflow = compositor._arrange_root, compositor.reflow
    in_reflow = [False]

    def arrange_root(*args: Any, **kwargs: Any) -> Any:
        if not kwargs.get("visible_only", True):
            calls.append("arrange in a layout" if in_reflow[0] else "arrange")
        return real_arrange(*args, **kwargs)

    def reflow(*args: Any, **kwargs: Any) -> Any:
        calls.append("reflow")
        in_reflow[0] = True
        try:
            return real_reflow(*args, **kwargs)
        finally:
            in_reflow[0] = False

    monkeypatch.setattr(compositor, "_arrange_root", arrange_root)
    monkeypatch.setattr(compositor, "reflow", reflow)
    return calls


async def test_a_layout_after_a_scroll_arranges_the_screen_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Textual's compositor leaves its full map marked stale after the layout that rebuilt it,
    so the first region lookup after a layout that followed a scroll arranged everything again."""
    compositor = LayoutCompositor()
    app = TallApp(compositor)
    async with app.run_test(size=(60, 20)) as pilot:
        scroll = app.screen.query_one("#scroll", VerticalScroll)
        await pilot.pause()
        scroll.scroll_to(y=50, animate=False)
        await pilot.pause()
        calls = count_full_arranges(compositor, monkeypatch)
        await scroll.mount(Static("one more"))
        await pilot.pause()
        await pilot.pause()
        # Only the layouts, each arranging the screen once (Textual's own compositor arranged
        # everything again after each, and inside one when the scroll bar was refreshed).
        assert calls and calls == ["reflow", "arrange in a layout"] * (len(calls) // 2)
        assert scroll.children[-1].region.height == 1  # and the regions are those of that layout
        assert scroll.children[0].region == compositor.full_map[scroll.children[0]].region


async def test_a_region_looked_up_during_a_layout_does_not_arrange_the_screen_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As a scroll bar does when it is arranged with a new height: it refreshes, which looks up
    its region. Textual's compositor arranged the whole screen inside the layout to answer."""
    compositor = LayoutCompositor()
    app = TallApp(compositor)
    async with app.run_test(size=(60, 20)) as pilot:
        scroll = app.screen.query_one("#scroll", VerticalScroll)
        await pilot.pause()
        scroll.scroll_to(y=50, animate=False)
        await pilot.pause()
        off_screen = scroll.children[150]
        nested: list[bool] = []
        real_arrange = compositor._arrange_root
        depth = [0]

        def arrange_root(*args: Any, **kwargs: Any) -> Any:
            if not kwargs.get("visible_only", True):
                nested.append(depth[0] > 0)
                depth[0] += 1
                try:
                    off_screen.region  # noqa: B018 (the lookup is the point)
                    return real_arrange(*args, **kwargs)
                finally:
                    depth[0] -= 1
            return real_arrange(*args, **kwargs)

        monkeypatch.setattr(compositor, "_arrange_root", arrange_root)
        scroll.refresh(layout=True)
        await pilot.pause()
        await pilot.pause()
        assert nested and not any(nested)


async def test_a_widget_not_mounted_yet_is_not_searched_for(monkeypatch: pytest.MonkeyPatch) -> None:
    compositor = LayoutCompositor()
    app = TallApp(compositor)
    async with app.run_test(size=(60, 20)) as pilot:
        scroll = app.screen.query_one("#scroll", VerticalScroll)
        await pilot.pause()
        scroll.scroll_to(y=50, animate=False)
        await pilot.pause()
        calls = count_full_arranges(compositor, monkeypatch)
        with pytest.raises(errors.NoWidget):
            compositor.find_widget(Static("never mounted"))
        assert calls == []  # Textual's own compositor arranged the whole screen to find out
        shown = scroll.children[60]
        assert compositor.find_widget(shown).region.y > 0  # a mounted one is found as before


async def test_a_widget_mounted_after_a_scroll_is_not_searched_for_before_its_layout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    compositor = LayoutCompositor()
    app = TallApp(compositor)
    async with app.run_test(size=(60, 20)) as pilot:
        scroll = app.screen.query_one("#scroll", VerticalScroll)
        await pilot.pause()
        scroll.scroll_to(y=50, animate=False)
        await pilot.pause()
        calls = count_full_arranges(compositor, monkeypatch)
        box = TitledBox()
        await scroll.mount(box, before=0)  # its title's update looks up the title's region
        assert "arrange" not in calls  # Textual's own compositor arranged the whole screen here
        await pilot.pause()
        await pilot.pause()
        assert "arrange" not in calls
        assert box.query_one("#title").region.height == 1  # placed by the layout


def test_the_main_screen_uses_it(app: TurnstoneApp) -> None:
    assert isinstance(app.main._compositor, LayoutCompositor)
