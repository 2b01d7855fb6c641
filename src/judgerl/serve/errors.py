"""Errors of the reward server's logic, with the HTTP status the app answers them with."""

from __future__ import annotations


class ApiError(Exception):
    """An error with an HTTP status and a message for the client."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


__all__ = ["ApiError"]
