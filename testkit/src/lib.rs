//! Test support for nasprobe: scenario trees (/proc and /sys written from declared rates).
