"""The README's marked blocks, as the figure scripts rewrite them."""


def replace_block(text, mark, body):
    """text with the block between <!-- figures:MARK --> and <!-- /figures:MARK --> replaced by
    body, or None without the markers."""
    start, end = f"<!-- figures:{mark} -->", f"<!-- /figures:{mark} -->"
    if start not in text or end not in text:
        return None
    a, z = text.index(start) + len(start), text.index(end)
    return text[:a] + "\n" + body + "\n" + text[z:]
