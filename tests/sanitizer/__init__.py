"""The kernel sweep run under ASan + UBSan by tools/sanitize.sh (a script, not pytest tests)."""
