"""Reading and writing models: the one cattrs converter and its hooks, and big JSON
answers read off the event loop (docs/architecture.md)."""
