"""The file tools: read_file, diff_file (files_read.py) and write_file, edit_file (files_edit.py)."""

from __future__ import annotations

from ..core.tools import Preparer
from .files_edit import PREPARERS as _EDIT_PREPARERS
from .files_read import PREPARERS as _READ_PREPARERS

PREPARERS: dict[str, Preparer] = {**_READ_PREPARERS, **_EDIT_PREPARERS}
