//! Text for the command line: `rules list`, `rules explain ID`, `rules check`, `explain`.
