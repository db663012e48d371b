"""Small terminals (90x30, 80x24): the prompt and the status bar stay on screen, panes adapt, wide
code blocks show that they scroll."""

from __future__ import annotations

import pytest
from textual.geometry import Region

from tests.app.helpers import answers, send, start, wait_until
from tests.helpers.model_server import Reply, ScriptedModelServer
from turnstone_tui.app.app import TurnstoneApp
from turnstone_tui.widgets.bash_pane import BashPane

pytestmark = pytest.mark.timeout(90)


def fully_visible(app: TurnstoneApp, region: Region) -> bool:
    return region.height > 0 and app.screen.region.contains_region(region)


@pytest.mark.parametrize("size", [(90, 30), (80, 24)])
@pytest.mark.parametrize("count", [2, 4, 6])
async def test_running_panes_leave_the_prompt_and_status_bar_visible(
    app: TurnstoneApp, size: tuple[int, int], count: int
) -> None:
    async with app.run_test(size=size) as pilot:
        await start(pilot)
        for index in range(count):
            app.panes.start(f"call_{index}", f"make target-{index}")
            app.panes.write(f"call_{index}", f"building target-{index}")
        await pilot.pause(0.2)
        width, height = size
        panes = list(app.query(BashPane))
        assert len(panes) == count
        assert fully_visible(app, app.status_bar.region), app.status_bar.region
        assert fully_visible(app, app.prompt.region), app.prompt.region
        assert app.screen.max_scroll_y == 0 and not app.screen.show_vertical_scrollbar
        assert app.panes.region.height <= height // 2
        assert app.chat.region.height >= 4, "some of the conversation stays visible"
        for pane in panes:
            assert fully_visible(app, pane.region)
            assert pane.region.width >= 30
            # every pane still shows its command and at least one output line
            assert "make target" in pane.query_one(".bash-pane--command").render().plain  # type: ignore[union-attr]
            assert pane.log_view.region.height >= 1


async def test_a_code_block_wider_than_the_screen_scrolls_visibly(
    app: TurnstoneApp, model_server: ScriptedModelServer
) -> None:
    wide = "result = compute(" + ", ".join(f"argument_{i}" for i in range(20)) + ")  # END"
    model_server.script([Reply.text(f"Here:\n\n```python\n{wide}\n```\n\nDone.")])
    async with app.run_test(size=(80, 24)) as pilot:
        await start(pilot)
        await send(pilot, "show code")
        await wait_until(pilot, lambda: any("Done." in a for a in answers(app)), 20)
        await pilot.pause(0.3)
        fences = [f for f in app.query("MarkdownFence") if f.is_mounted]
        assert len(fences) == 1
        fence = fences[0]
        assert fence.max_scroll_x > 0, "the line is wider than the chat"
        assert fence.show_horizontal_scrollbar and fence.scrollbar_size_horizontal == 1
        fence.scroll_to(x=fence.max_scroll_x, animate=False, immediate=True)
        await pilot.pause()
        screen_text = "\n".join(strip.text for strip in app.screen._compositor.render_strips())
        assert "# END" in screen_text, "scrolled, the end of the line is reachable"


@pytest.mark.parametrize("size", [(80, 24), (80, 16), (120, 40)])
@pytest.mark.parametrize("typed", ["/", "@"])
async def test_the_completion_menu_never_hides_what_is_typed(
    app: TurnstoneApp, size: tuple[int, int], typed: str, tmp_path
) -> None:
    """The menu above the prompt shrinks to fit: the prompt's typed line and its border stay on screen."""
    for index in range(30):
        (tmp_path / "work" / f"file_{index:02}.txt").write_text("x")
    async with app.run_test(size=size) as pilot:
        await start(pilot)
        app.prompt.focus()
        await pilot.press(typed)
        menu = app.query_one("#completion-menu")
        await wait_until(pilot, lambda: menu.is_open, 20)  # type: ignore[attr-defined]
        await pilot.pause(0.2)
        area = app.query_one("#prompt-area").region
        assert fully_visible(app, app.prompt.region), app.prompt.region
        assert area.contains_region(app.prompt.region), f"the prompt {app.prompt.region} is cut by {area}"
        assert app.prompt.region.height >= 3, "one typed line between the borders"
        assert fully_visible(app, app.status_bar.region)
        assert menu.region.height >= 3, "the menu still shows at least one entry"
        width, height = size
        if height >= 40:
            assert menu.region.height == 10, "a big terminal keeps the full menu"
        screen_text = "\n".join(strip.text for strip in app.screen._compositor.render_strips())
        prompt_lines = screen_text.splitlines()[app.prompt.region.y : app.prompt.region.bottom]
        assert any(typed in line for line in prompt_lines), prompt_lines
