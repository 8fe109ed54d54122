"""Pure folds over clew events: node tree, boards, timeline, usage, context building."""
