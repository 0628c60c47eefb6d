//! Pure parsers of /proc and /sys text: bytes in, structs out, no I/O, no allocation.
