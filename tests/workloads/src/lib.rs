//! CPU-bound work written once for every place that runs it: compiled to
//! wasm in the spinner test plugin (`count_primes`) and natively in the
//! benchmarks' servers and baselines, so that a comparison of the two
//! measures the compilers and the host, never two versions of the code.

/// The number of primes below `below`, by a sieve of Eratosthenes (a byte
/// per number): tight loops over one array, no calls.
pub fn sieve(below: usize) -> usize {
    if below < 3 {
        return 0;
    }
    let mut composite = vec![false; below];
    let mut count = 0;
    for n in 2..below {
        if composite[n] {
            continue;
        }
        count += 1;
        let mut multiple = n.saturating_mul(n);
        while multiple < below {
            composite[multiple] = true;
            multiple += n;
        }
    }
    count
}

#[cfg(test)]
mod tests {
    use super::sieve;

    #[test]
    fn counts_the_primes_below_a_bound() {
        assert_eq!(sieve(0), 0);
        assert_eq!(sieve(2), 0);
        assert_eq!(sieve(3), 1);
        assert_eq!(sieve(10), 4);
        assert_eq!(sieve(1000), 168);
    }
}
