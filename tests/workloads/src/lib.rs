//! CPU-bound work written once for every place that runs it: compiled to
//! wasm in the spinner test plugin (`count_primes`, `count_primes_by_division`) and natively in the
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

/// The number of primes below `below`, each number tried by division with
/// every odd number up to its square root: a loop of divisions, no memory.
pub fn trial_division(below: u32) -> usize {
    (2..below).filter(|&n| is_prime(n)).count()
}

fn is_prime(n: u32) -> bool {
    if n.is_multiple_of(2) {
        return n == 2;
    }
    let mut divisor = 3;
    while divisor * divisor <= n {
        if n.is_multiple_of(divisor) {
            return false;
        }
        divisor += 2;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::{sieve, trial_division};

    #[test]
    fn counts_the_primes_below_a_bound() {
        assert_eq!(sieve(0), 0);
        assert_eq!(sieve(2), 0);
        assert_eq!(sieve(3), 1);
        assert_eq!(sieve(10), 4);
        assert_eq!(sieve(1000), 168);
    }

    #[test]
    fn trial_division_counts_as_the_sieve_does() {
        for below in [0, 2, 3, 10, 1000, 200_000] {
            assert_eq!(trial_division(below), sieve(below as usize), "below {below}");
        }
    }
}
