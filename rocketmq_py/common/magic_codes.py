"""The magic codes in the second field of a CommitLog record (Java's ``MessageDecoder`` and ``CommitLog``).

The one home of these values: the codec and store-layout twins import them, and the compiled modules
copy them into C variables at import.
"""
from __future__ import annotations

__all__ = ["MESSAGE_MAGIC_CODE", "BLANK_MAGIC_CODE"]

#: A message record (magic V1): 0xDAA320A7 as a Java int.
MESSAGE_MAGIC_CODE = -626843481
#: The blank that pads the end of a CommitLog file: 0xCBD43194 as a Java int.
BLANK_MAGIC_CODE = -875286124
