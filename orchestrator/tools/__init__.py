"""The tools the model calls: their argument models and schemas, and the dispatch of a call."""
