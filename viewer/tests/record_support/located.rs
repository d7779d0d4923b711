//! Where the report (`report --json`) puts code: each listed location's
//! label, ranks, count and offset in its module, as the `record_*` tests
//! that compare code locations across ranks read them.

/// A location of the report: label, ranks, count, module offset (0 where
/// it has none).
pub type Located = (String, Vec<u64>, u64, u64);

/// (label, ranks, `count`, module offset) of `list`'s locations, by offset.
pub fn located(list: &serde_json::Value, count: &str) -> Vec<Located> {
    let mut v: Vec<_> = list
        .as_array()
        .expect("a list")
        .iter()
        .map(|r| {
            let ranks = r["ranks"].as_array().map_or_else(Vec::new, |a| {
                a.iter().map(|x| x.as_u64().unwrap()).collect()
            });
            (
                r["location"]["label"].as_str().unwrap().to_string(),
                ranks,
                r[count].as_u64().unwrap(),
                r["location"]["module_offset"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    v.sort_by_key(|x| x.3);
    v
}

/// The report's parallel regions, with their instances.
pub fn report_regions(report: &serde_json::Value) -> Vec<Located> {
    located(&report["regions"]["observed"], "instances")
}

/// The report's `MPI_Allreduce` call sites (which list no ranks), with
/// their calls.
pub fn allreduce_sites(report: &serde_json::Value) -> Vec<Located> {
    let sites: Vec<serde_json::Value> = report["mpi"]["observed"]["callsites"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["call"] == "MPI_Allreduce")
        .cloned()
        .collect();
    located(&serde_json::Value::Array(sites), "count")
}
