"""The vehicle-position use case's geo analytics: H3 cell windows and the bunching pattern."""
