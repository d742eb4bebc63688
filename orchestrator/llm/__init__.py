"""Model access: every call through litellm, with retries, and the built-in back ends."""
