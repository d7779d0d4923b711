// Values of `HYSCOPE_*` variables that are not valid, and the rest of the
// warning each gives after "VAR=`value` ": the cases run under real programs
// by the collector's tests (LD_PRELOAD) and `hyscope record`'s (included
// by both with `include!`).
const BAD_VALUES: &[(&str, &str, &str)] = &[
    ("HYSCOPE_MODE", "xyz", "is not trace or profile; using trace"),
    ("HYSCOPE_BUFFER_MB", "-1", "is not a whole number from 1 to 1048576; using 64"),
    ("HYSCOPE_BUFFER_MB", "0", "is not a whole number from 1 to 1048576; using 64"),
    ("HYSCOPE_BUFFER_MB", "1e20", "is not a whole number from 1 to 1048576; using 64"),
    ("HYSCOPE_DISPATCH", "maybe", "is not on or off; using on"),
    ("HYSCOPE_CLOCK", "bogus", "is not auto, tsc or monotonic; using auto"),
    ("HYSCOPE_SAMPLE_MS", "-5", "is not a whole number from 0 to 3600000; using 100"),
    ("HYSCOPE_OMPT", "perhaps", "is not on or off; using on"),
];
