//! Acceptance tests of the estimators on synthetic phase logs (see `synth`).

use super::baseline::BaselineRule;
use super::error::AnalysisError;
use super::estimate::{Method, Scale};
use super::rng::Rng;
use super::synth::{simulate, two_digests, Arm, Sim};
use super::*;

const RUNS: usize = 200;

/// Fractions over `RUNS` simulated runs: the interval covers the truth, the estimate is
/// significant, throughput drift is flagged.
#[derive(Debug, Default, Clone, Copy)]
struct Rates {
    covered: f64,
    significant: f64,
    drift: f64,
}

/// Runs `RUNS` simulations and scores each metric against its true value.
fn rates(seed: u64, sim: &Sim, arms: &[Arm], truths: &[(Metric, f64)]) -> Vec<Rates> {
    let mut rng = Rng::new(seed);
    let mut out = vec![Rates::default(); truths.len()];
    let scenario = arms[1].name;
    let hit = |b: bool| f64::from(u8::from(b)) / RUNS as f64;
    for _ in 0..RUNS {
        let a = analyze(&simulate(&mut rng, sim, arms), None).unwrap();
        let drifted = a.drift_of(scenario, Metric::Throughput).unwrap().flagged;
        for (r, &(metric, truth)) in out.iter_mut().zip(truths) {
            let e = a.estimate(scenario, metric).unwrap();
            assert_eq!(e.n_blocks as u64, sim.blocks);
            let (lo, hi) = (e.ci_low.unwrap(), e.ci_high.unwrap());
            r.covered += hit(lo <= truth && truth <= hi);
            r.significant += hit(e.significant);
            r.drift += hit(drifted);
        }
    }
    out
}

fn arms_with(throughput: f64, latency: f64) -> Vec<Arm> {
    vec![
        Arm::new("pfsoff"),
        Arm::new("pfson_conon_inson")
            .throughput(throughput)
            .latency(latency),
    ]
}

#[test]
fn five_percent_effect_coverage_and_power() {
    // 6 blocks, 4% phase-to-phase noise, 10% block-to-block swings.
    let arms = arms_with(0.95, 1.05);
    let truths = [
        (Metric::Throughput, -0.05),
        (Metric::MeanLatency, 0.05),
        (Metric::P50Latency, 0.05),
        (Metric::P95Latency, 0.05),
        (Metric::P99Latency, 0.05),
    ];
    for (r, (metric, truth)) in rates(11, &Sim::default(), &arms, &truths)
        .iter()
        .zip(truths)
    {
        eprintln!(
            "6 blocks, cv 4%, true {:+}%: {}: coverage {:.1}%, power {:.1}%",
            truth * 100.0,
            metric.label(),
            r.covered * 100.0,
            r.significant * 100.0
        );
        assert!(r.covered >= 0.90, "{metric:?} {r:?}");
    }
    // Enough blocks to see 5% through 3% noise: detected nearly always.
    let sim = Sim {
        blocks: 12,
        cv: 0.03,
        ..Sim::default()
    };
    let r = rates(12, &sim, &arms, &[(Metric::Throughput, -0.05)])[0];
    eprintln!(
        "12 blocks, cv 3%, true -5%: throughput: coverage {:.1}%, power {:.1}%",
        r.covered * 100.0,
        r.significant * 100.0
    );
    assert!(r.significant >= 0.90, "{r:?}");
    assert!(r.covered >= 0.90, "{r:?}");
}

#[test]
fn a_true_five_percent_loss_is_detected() {
    let sim = Sim {
        blocks: 10,
        cv: 0.03,
        ..Sim::default()
    };
    let log = simulate(&mut Rng::new(3), &sim, &arms_with(0.95, 1.05));
    let a = analyze(&log, None).unwrap();
    let e = a.estimate("pfson_conon_inson", Metric::Throughput).unwrap();
    assert!(e.significant, "{e:?}");
    assert!(
        e.ci_high.unwrap() < 0.0 && (e.ratio + 0.05).abs() < 0.03,
        "{e:?}"
    );
    assert_eq!((e.method, e.scale), (Method::T, Scale::Ratio));
    let lat = a
        .estimate("pfson_conon_inson", Metric::MeanLatency)
        .unwrap();
    assert!(
        lat.significant && lat.ratio > 0.0 && lat.mix_adjusted,
        "{lat:?}"
    );
}

#[test]
fn a_a_is_rarely_significant_and_drift_rarely_flagged() {
    // (The simulation records no server CPU.)
    let truths: Vec<(Metric, f64)> = Metric::ALL
        .iter()
        .filter(|m| **m != Metric::ServerCpu)
        .map(|m| (*m, 0.0))
        .collect();
    let arms = vec![Arm::new("pfsoff"), Arm::new("pfson_conon_inson")];
    let all = rates(21, &Sim::default(), &arms, &truths);
    for (r, (metric, _)) in all.iter().zip(&truths) {
        eprintln!(
            "A/A, 6 blocks, cv 4%: {}: significant {:.1}%, coverage {:.1}%",
            metric.label(),
            r.significant * 100.0,
            r.covered * 100.0,
        );
        assert!(r.significant <= 0.10, "{metric:?} {r:?}");
    }
    eprintln!("A/A: throughput drift flagged {:.1}%", all[0].drift * 100.0);
    assert!(all[0].drift <= 0.10, "{:?}", all[0]);
}

#[test]
fn a_linear_trend_is_flagged_as_drift() {
    let sim = Sim {
        blocks: 12,
        cv: 0.03,
        trend_per_block: 0.02,
        ..Sim::default()
    };
    let arms = arms_with(1.0, 1.0);
    let mut rng = Rng::new(31);
    let mut flagged = 0;
    for _ in 0..50 {
        let a = analyze(&simulate(&mut rng, &sim, &arms), None).unwrap();
        let d = a.drift_of("pfson_conon_inson", Metric::Throughput).unwrap();
        flagged += usize::from(d.flagged);
        assert!(d.slope_per_block > 0.0);
        let lat = a
            .drift_of("pfson_conon_inson", Metric::MeanLatency)
            .unwrap();
        assert!(lat.slope_per_block < 0.0);
    }
    eprintln!("trend 2%/block, 12 blocks, cv 3%: drift flagged in {flagged}/50");
    assert!(flagged >= 45, "{flagged}/50");
    let a = analyze(&simulate(&mut Rng::new(32), &sim, &arms), None).unwrap();
    let d = a.drift_of("pfson_conon_inson", Metric::Throughput).unwrap();
    assert!(
        d.flagged && (d.slope_per_block - 0.02).abs() < 0.01,
        "{d:?}"
    );
    assert!(
        a.warnings.iter().any(|w| w.contains("drifts")),
        "{:?}",
        a.warnings
    );
}

#[test]
fn a_mix_shift_is_not_latency_overhead() {
    // Same per-digest latency; the scenario runs 50% slow queries instead of 20%, so its
    // plain mean latency is about twice the baseline's.
    let arms = vec![
        Arm::new("pfsoff").mix(two_digests(0.8)),
        Arm::new("pfson_conoff_insoff").mix(two_digests(0.5)),
    ];
    let noiseless = Sim {
        cv: 0.0,
        block_sd: 0.0,
        ..Sim::default()
    };
    let a = analyze(&simulate(&mut Rng::new(1), &noiseless, &arms), None).unwrap();
    for metric in [
        Metric::MeanLatency,
        Metric::P50Latency,
        Metric::P95Latency,
        Metric::P99Latency,
    ] {
        let e = a.estimate("pfson_conoff_insoff", metric).unwrap();
        assert!(e.ratio.abs() < 0.005, "{e:?}");
        assert!(e.mix_adjusted && e.digest_coverage == Some(1.0));
    }
    let mean = a
        .estimate("pfson_conoff_insoff", Metric::MeanLatency)
        .unwrap();
    assert!(mean.scenario_value / mean.baseline_value > 1.8, "{mean:?}");

    // With noise: over many runs, no more false alarms than the A/A rate.
    let mut rng = Rng::new(2);
    let mut false_alarms = 0;
    for _ in 0..50 {
        let a = analyze(&simulate(&mut rng, &Sim::default(), &arms), None).unwrap();
        let e = a
            .estimate("pfson_conoff_insoff", Metric::MeanLatency)
            .unwrap();
        false_alarms += usize::from(e.significant);
        assert!(e.ratio.abs() < 0.06, "{e:?}");
    }
    assert!(false_alarms <= 5, "{false_alarms}/50");
}

#[test]
fn error_rates_are_absolute_differences() {
    let arms = vec![
        Arm::new("pfsoff").errors(0.0),
        Arm::new("pfson_conon_inson").errors(0.01),
    ];
    let a = analyze(&simulate(&mut Rng::new(4), &Sim::default(), &arms), None).unwrap();
    let e = a.estimate("pfson_conon_inson", Metric::ErrorRate).unwrap();
    assert_eq!(e.scale, Scale::Difference);
    assert!((e.ratio - 0.01).abs() < 0.003 && e.significant, "{e:?}");
    assert_eq!(e.baseline_value, 0.0);
}

#[test]
fn reproducible_and_serialisable() {
    let sim = Sim {
        blocks: 10, // more than `EXACT_MAX_BLOCKS`: the bootstrap resamples with its seed
        ..Sim::default()
    };
    let log = simulate(&mut Rng::new(5), &sim, &arms_with(0.97, 1.02));
    let a = analyze(&log, None).unwrap();
    assert_eq!(a, analyze(&log, None).unwrap(), "same log, same bootstrap");
    assert_eq!(a.estimates.len(), 6);
    assert_eq!(a.drift.len(), 2);
    assert_eq!((a.blocks, a.complete_blocks), (10, 10));
    assert!(a.warnings.is_empty(), "{:?}", a.warnings);
    let json = serde_json::to_value(&a).unwrap();
    assert_eq!(json["baseline"], "pfsoff");
    assert_eq!(json["baseline_rule"], "pfsoff");
    assert_eq!(json["estimates"][0]["metric"], "throughput");
    assert_eq!(json["estimates"][0]["method"], "t");
    assert_eq!(json["estimates"][2]["method"], "bootstrap");
}

#[test]
fn baseline_follows_the_rules() {
    let sim = Sim {
        blocks: 3,
        ..Sim::default()
    };
    let names = |list: &[&'static str]| list.iter().map(|n| Arm::new(n)).collect::<Vec<_>>();
    let log = simulate(
        &mut Rng::new(6),
        &sim,
        &names(&["pfson_conon_inson", "pfson_conon_insoff", "pfsoff"]),
    );
    let a = analyze(&log, Some("pfson_conon_inson")).unwrap();
    assert_eq!(
        (a.baseline.as_str(), a.baseline_rule),
        ("pfsoff", BaselineRule::Pfsoff)
    );
    assert!(a
        .warnings
        .iter()
        .any(|w| w.contains("instead of the requested")));
    assert_eq!(a.estimates.len(), 12);

    let log = simulate(
        &mut Rng::new(6),
        &sim,
        &names(&[
            "pfson_conon_inson",
            "pfson_conoff_inson",
            "pfson_conon_insoff",
        ]),
    );
    let a = analyze(&log, None).unwrap();
    assert_eq!(a.baseline, "pfson_conon_insoff");
    assert_eq!(a.baseline_rule, BaselineRule::LeastInstrumented);
    let a = analyze(&log, Some("pfson_conoff_inson")).unwrap();
    assert_eq!(a.baseline_rule, BaselineRule::Requested);
    assert!(a
        .estimates
        .iter()
        .all(|e| e.baseline == "pfson_conoff_inson"));

    let log = simulate(&mut Rng::new(6), &sim, &names(&["x", "y"]));
    let a = analyze(&log, None).unwrap();
    assert_eq!(a.baseline_rule, BaselineRule::FirstScheduled);
    assert_eq!(a.baseline, log[0].scenario);
}

#[test]
fn errors_and_degenerate_logs() {
    assert_eq!(analyze(&[], None), Err(AnalysisError::NoPhases));
    let log = simulate(&mut Rng::new(7), &Sim::default(), &arms_with(1.0, 1.0));
    assert!(matches!(
        analyze(&log, Some("nope")),
        Err(AnalysisError::BaselineNotScheduled { .. })
    ));
    let only: Vec<_> = log
        .iter()
        .filter(|r| r.scenario == "pfsoff")
        .cloned()
        .collect();
    assert!(matches!(
        analyze(&only, None),
        Err(AnalysisError::NothingToCompare { .. })
    ));
    // Never in the same block: nothing to pair.
    let apart: Vec<_> = log
        .iter()
        .filter(|r| (r.scenario == "pfsoff") == (r.block % 2 == 0))
        .cloned()
        .collect();
    assert!(matches!(
        analyze(&apart, None),
        Err(AnalysisError::NoPairedBlocks { .. })
    ));
    let bad = Options {
        level: 1.5,
        ..Options::default()
    };
    assert_eq!(
        analyze_with(&log, None, &bad),
        Err(AnalysisError::BadLevel(1.5))
    );

    // One block: point estimates without intervals, flagged.
    let one: Vec<_> = log.iter().filter(|r| r.block == 0).cloned().collect();
    let a = analyze(&one, None).unwrap();
    assert!(a
        .estimates
        .iter()
        .all(|e| e.ci_low.is_none() && !e.significant && e.n_blocks == 1));
    assert!(a.drift.is_empty());
    assert!(
        a.warnings.iter().any(|w| w.contains("point estimates")),
        "{:?}",
        a.warnings
    );

    // Two blocks: intervals (t with 1 degree of freedom) where they are narrow enough to say
    // something, else what more blocks would give one; no drift check.
    let two: Vec<_> = log.iter().filter(|r| r.block < 2).cloned().collect();
    let a = analyze(&two, None).unwrap();
    assert!(a
        .estimates
        .iter()
        .all(|e| e.ci_low.is_some() != e.needs.is_some()));
    assert!(a.estimates.iter().any(|e| e.ci_low.is_some()));
    for e in a.estimates.iter().filter(|e| e.needs.is_some()) {
        let said = e.needs.as_ref().unwrap().text();
        assert!(
            said.starts_with("not enough blocks for an interval"),
            "{said}"
        );
    }
    assert!(a.drift.is_empty());
    assert_eq!(
        a.warnings
            .iter()
            .filter(|w| w.contains("drift not checked"))
            .count(),
        2,
        "{:?}",
        a.warnings
    );

    // A run stopped mid-block: the partial block still pairs what it has.
    let mut partial = log.clone();
    partial.push({
        let mut r = log[0].clone();
        r.block = 6;
        r
    });
    let a = analyze(&partial, None).unwrap();
    assert_eq!((a.blocks, a.complete_blocks), (7, 6));
    assert!(a.warnings.iter().any(|w| w.contains("incomplete")));
}

/// A run whose switches eat the slots says so among the run's warnings (the report and the
/// study's table print them); the same run with quick switches does not.
#[test]
fn a_run_whose_switches_eat_the_slots_is_warned_about() {
    let arms = [
        Arm::new("pfson_conoff_insoff"),
        Arm::new("pfson_conon_inson"),
    ];
    let log = simulate(&mut Rng::new(5), &Sim::default(), &arms);
    let with_switches = |mean_ms: f64| -> Vec<crate::phase_log::PhaseRecord> {
        let mut log = log.clone();
        for p in &mut log {
            switch_load::with_test_switches(p, mean_ms);
        }
        log
    };
    let switching = |a: &RunAnalysis| a.warnings.iter().any(|w| w.starts_with("switching took"));
    let quick = analyze_run(&with_switches(23.0), None, &Options::default()).unwrap();
    assert!(!switching(&quick), "{:?}", quick.warnings);
    let slow = analyze_run(&with_switches(150.0), None, &Options::default()).unwrap();
    assert!(switching(&slow), "{:?}", slow.warnings);
    let w = slow
        .warnings
        .iter()
        .find(|w| w.starts_with("switching took"))
        .unwrap();
    assert!(
        w.contains("150 ms on average, 60% of the fast slots' time"),
        "{w}"
    );
    assert!(w.contains("--phase 750ms"), "{w}");
}

/// Slots eaten by switching at 512 threads once gave a fast cell of -90%..+400%: an interval
/// that wide is never given, of any schedule; the estimate says how many more blocks (and
/// minutes) an interval of +-3 points would need. The same run with quiet phases keeps its
/// interval.
#[test]
fn an_interval_too_wide_to_say_anything_is_replaced_by_what_it_needs() {
    let arms = arms_with(1.0, 1.0);
    let mut rng = Rng::new(512);
    let wild = Sim {
        blocks: 10,
        cv: 0.9,
        ..Sim::default()
    };
    let a = analyze(&simulate(&mut rng, &wild, &arms), None).unwrap();
    let e = a.estimate("pfson_conon_inson", Metric::Throughput).unwrap();
    assert!(
        e.ci_low.is_none() && e.ci_high.is_none() && !e.significant,
        "{e:?}"
    );
    let needs = e.needs.as_ref().expect("what it needs");
    assert!(needs.blocks > 10 && needs.minutes > 0.0, "{needs:?}");
    assert!(
        needs
            .text()
            .starts_with("not enough blocks for an interval: about "),
        "{}",
        needs.text()
    );
    let quiet = analyze(&simulate(&mut rng, &Sim::default(), &arms), None).unwrap();
    let e = quiet
        .estimate("pfson_conon_inson", Metric::Throughput)
        .unwrap();
    assert!(e.ci_low.is_some() && e.needs.is_none(), "{e:?}");
}

/// Slots the leader lengthened from the switch cost: the report lists the lengths and judges
/// the switching by the slots as they ended (no warning), while the same run at the short
/// slot throughout is warned about.
#[test]
fn lengthened_slots_are_listed_and_judged_as_they_ended() {
    let arms = [
        Arm::new("pfson_conoff_insoff"),
        Arm::new("pfson_conon_inson"),
    ];
    let mut log = simulate(&mut Rng::new(6), &Sim::default(), &arms);
    for p in &mut log {
        let slot = if p.block < 2 { 250 } else { 2250 };
        switch_load::with_test_switches_in(p, 450.0, slot);
    }
    let a = analyze_run(&log, None, &Options::default()).unwrap();
    assert_eq!(a.slot_lengths_ms, [250, 2250]);
    assert!(
        !a.warnings.iter().any(|w| w.starts_with("switching took")),
        "{:?}",
        a.warnings
    );
    for p in &mut log {
        switch_load::with_test_switches_in(p, 450.0, 250);
    }
    let a = analyze_run(&log, None, &Options::default()).unwrap();
    assert_eq!(a.slot_lengths_ms, [250]);
    assert!(a.warnings.iter().any(|w| w.starts_with("switching took")));
    // Still lengthening when the run ended (its last segment's switches heavier than its
    // slots): nothing for the user to do. At the 5 s cap: warned only if blocks went
    // incomplete (fewer than 90% hold every scenario); complete blocks at the cap cost
    // measured time, which the intervals show, and leave the user nothing to change.
    for (p, slot) in log.iter_mut().zip([250, 2000].iter().cycle()) {
        switch_load::with_test_switches_in(
            p,
            900.0,
            if p.block < 2 { 250 } else { *slot.max(&2000) },
        );
    }
    let a = analyze_run(&log, None, &Options::default()).unwrap();
    assert_eq!(a.slot_lengths_ms, [250, 2000]);
    assert!(
        !a.warnings.iter().any(|w| w.starts_with("switching took")),
        "{:?}",
        a.warnings
    );
    for p in &mut log {
        let slot = if p.block < 2 { 250 } else { 5000 };
        switch_load::with_test_switches_in(p, 1800.0, slot);
    }
    let a = analyze_run(&log, None, &Options::default()).unwrap();
    assert_eq!(a.slot_lengths_ms, [250, 5000]);
    let complete = a.fast.as_ref().map(|f| (f.complete_blocks, f.blocks));
    assert!(complete.is_some_and(|(c, all)| c == all), "{complete:?}");
    assert!(
        !a.warnings.iter().any(|w| w.starts_with("switching took")),
        "{:?}",
        a.warnings
    );
    // The same run with one scenario's slot lost in every fifth block from the third on
    // (the switches ate it): 80% of the blocks complete, warned.
    let blocks = log.iter().map(|p| p.block).max().unwrap_or(0) + 1;
    let lost: Vec<_> = log
        .iter()
        .filter(|p| !(p.block >= 2 && p.block % 5 == 0 && p.scenario == "pfson_conon_inson"))
        .cloned()
        .collect();
    let a = analyze_run(&lost, None, &Options::default()).unwrap();
    let f = a.fast.as_ref().expect("fast");
    assert!(
        f.complete_blocks < f.blocks && (f.complete_blocks as f64) < 0.9 * blocks as f64,
        "{} of {}",
        f.complete_blocks,
        f.blocks
    );
    assert!(
        a.warnings.iter().any(|w| w.starts_with("switching took")),
        "{:?}",
        a.warnings
    );
}
