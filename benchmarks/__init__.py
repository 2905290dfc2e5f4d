"""Speed and memory measurements for the book's performance appendix; ratios are measured side by
side in one run, never asserted as timings in tests."""
