"""Full-screen review of a plan written by ``plan_agent``: accept, reject or annotate.

``enter``/``a`` accept, ``r`` reject, ``e`` opens an annotation editor; ``ctrl+s`` (or
``ctrl+enter`` where the terminal sends it) submits the annotation, ``esc`` closes the editor.
"""

from __future__ import annotations

import os
from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Footer, Markdown, Static, TextArea

from ...core.display import visible
from ...core.resources import styles_dir
from ...core.types import PlanReview
from ...widgets.ordered_keys import OrderedTextArea


class PlanReviewScreen(Screen[PlanReview]):
    """Shows the plan as Markdown; dismisses with a `PlanReview`."""

    CSS_PATH = styles_dir() / "plan_review.tcss"
    AUTO_FOCUS = "#plan-scroll"

    BINDINGS = [
        Binding("enter", "accept", "Accept"),
        Binding("a", "accept", "Accept", show=False),
        Binding("r", "reject", "Reject"),
        Binding("e", "annotate", "Annotate"),
        Binding("ctrl+s", "submit_annotation", "Send annotation", priority=True),
        Binding("ctrl+enter", "submit_annotation", "Send annotation", show=False, priority=True),
        Binding("escape", "close_editor", "Close editor", priority=True),
    ]

    def __init__(self, plan: str, path: str, version: int = 1) -> None:
        super().__init__()
        self.plan = plan
        self.path = path
        self.version = version
        self._dismissed = False

    def compose(self) -> ComposeResult:
        with Horizontal(id="plan-header"):
            yield Static(Content.styled("Plan review", "bold $text-accent"), id="plan-title")
            yield Static(Content.styled(f"v{self.version}", "bold"), id="plan-version")
            yield Static(
                Content.styled(visible(self.shown_path), "$text-muted"), id="plan-path", markup=False
            )
        with VerticalScroll(id="plan-scroll"):
            yield Markdown(visible(self.plan, crlf=True) or "*(the plan is empty)*", id="plan-markdown")
        with Vertical(id="plan-editor"):
            yield Static(
                Content.assemble(
                    ("Annotate the plan", "bold"),
                    ("  ctrl+s send · esc close", "$text-muted"),
                ),
                id="plan-editor-title",
            )
            yield OrderedTextArea(
                id="plan-annotation", soft_wrap=True, show_line_numbers=False, tab_behavior="indent"
            )
        yield Footer()

    @property
    def shown_path(self) -> str:
        """The plan's path, relative to the app's working directory when it lies inside it, else
        with the home directory shown as ``~`` (plans live in the app's data dir)."""
        path = Path(self.path)
        base = getattr(self.app, "cwd", None) or Path.cwd()
        for root, prefix in ((Path(base), ""), (Path(os.path.expanduser("~")), "~/")):
            try:
                return prefix + str(path.resolve().relative_to(root.resolve()))
            except (ValueError, OSError):
                continue
        return self.path

    @property
    def editor_open(self) -> bool:
        return self.query_one("#plan-editor").has_class("-open")

    def _decide(self, review: PlanReview) -> None:
        if self._dismissed:
            return
        self._dismissed = True
        self.dismiss(review)

    def action_accept(self) -> None:
        self._decide(PlanReview("accept"))

    def action_reject(self) -> None:
        self._decide(PlanReview("reject"))

    def action_annotate(self) -> None:
        editor = self.query_one("#plan-editor")
        editor.add_class("-open")
        self.query_one("#plan-annotation", TextArea).focus()
        self.refresh_bindings()

    def action_close_editor(self) -> None:
        if not self.editor_open:
            return
        self.query_one("#plan-editor").remove_class("-open")
        self.query_one("#plan-scroll").focus()
        self.refresh_bindings()

    def action_submit_annotation(self) -> None:
        if not self.editor_open:
            return
        text = self.query_one("#plan-annotation", TextArea).text.strip()
        if not text:
            self.notify("Write an annotation first (esc closes the editor).", severity="warning")
            return
        self._decide(PlanReview("annotate", text))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        editing = self.is_mounted and self.editor_open
        if action in ("accept", "reject", "annotate"):
            return not editing
        if action in ("submit_annotation", "close_editor"):
            return editing
        return True
