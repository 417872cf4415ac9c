//! The one median and percentile of the workspace: experiments, optimize,
//! the fleet's analysis, `k8s run`'s comparison and the bench harness take
//! medians here, of the finite values only; the latency breakdown takes
//! its nearest-rank percentiles here.

/// The finite values of `values`, sorted.
pub fn sorted_finite(values: &[f64]) -> Vec<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    v
}

/// The median of values sorted already (the mean of the middle two for
/// an even count); None when there are none.
pub fn median_of_sorted(v: &[f64]) -> Option<f64> {
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

/// The median of the finite values, or None without any.
pub fn median(values: &[f64]) -> Option<f64> {
    median_of_sorted(&sorted_finite(values))
}

/// The nearest-rank `q` quantile (0 < q <= 1) of values sorted already:
/// the smallest value with at least q of them at or below it; None when
/// there are none.
pub fn nearest_rank<T: Copy>(sorted: &[T], q: f64) -> Option<T> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let r = ((q * n as f64).ceil() as usize).clamp(1, n);
    Some(sorted[r - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<i64> = (1..=100).collect();
        assert_eq!(nearest_rank(&v, 0.5), Some(50));
        assert_eq!(nearest_rank(&v, 0.99), Some(99));
        assert_eq!(nearest_rank(&v, 0.999), Some(100));
        assert_eq!(nearest_rank(&[7], 0.01), Some(7));
        assert_eq!(nearest_rank::<i64>(&[], 0.5), None);
    }

    #[test]
    fn medians_of_odd_even_and_non_finite_values() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[f64::NAN]), None);
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[f64::INFINITY, 1.0, 3.0]), Some(2.0));
    }
}
