"""Let go of the drawn lines of widgets that are gone (a leak in Textual's line cache).

Each widget keeps the lines it drew in a ``StylesCache`` (its ``_styles_cache``: every rendered
line as a ``Strip``, each with six small caches of its own, plus what the compositor cut from it,
and through the app's line filter a filtered copy of each). Textual's
``StylesCache.get_inner_outer`` is an ``lru_cache(1024)`` on an instance method, so its keys hold
``self``: the last 1024 ``StylesCache`` objects any widget drew with stay alive, with every line
they cached, long after their widgets were removed (Textual issue #6665, open; Textual is pinned
at 8.2.8). The chat removes widgets all the time (streamed Markdown blocks replaced, old entries
pruned, history paged out), so a session kept up to 1024 dead widgets' lines: in process, 40
turns of bench/terminal_turns.py's answers left 16,000 Strips alive where 4,600 are live.

``release_dead_widget_caches`` empties that cache (what it computes is two ``Style`` objects from
two colours, recomputed on the next line a live widget draws); the dead widgets' lines are then
freed at once (nothing in them refers back: no collection needed).
"""

from __future__ import annotations

from textual._styles_cache import StylesCache


def release_dead_widget_caches() -> None:
    StylesCache.get_inner_outer.cache_clear()
