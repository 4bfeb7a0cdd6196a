"""Text for a terminal: what came from the data is shown, never obeyed.

A file name, a reason or a carried value may hold control characters (an ESC sequence sets
a window's title, clears the screen, makes a link); printed raw, the terminal would act on
them. `visible` writes each as an escape a person can read (`\\x1b`), keeping tabs and the
rest of the text as they are.
"""

from __future__ import annotations

import re

# C0 controls but tab, DEL, and the C1 controls (ESC's 8-bit forms among them).
_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f]")


def visible(text: str) -> str:
    """`text` with its control characters written as escapes."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
