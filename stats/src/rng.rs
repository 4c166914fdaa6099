//! A seeded random number generator for the simulations that check the verdicts against
//! known truth (this crate's and the flame graphs' of the comparison): the same seed gives
//! the same numbers on every machine, so a simulated rate never hangs on chance.

/// xoshiro256** seeded by splitmix64: small, fast, and enough for simulation.
pub struct Rng([u64; 4]);

impl Rng {
    /// The generator of `seed`.
    pub fn new(mut seed: u64) -> Self {
        let mut next = || {
            seed = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = seed;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        Rng([next(), next(), next(), next()])
    }

    fn next_u64(&mut self) -> u64 {
        let s = &mut self.0;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform on [0, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Standard normal (Box–Muller).
    pub fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.uniform();
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }

    /// Poisson: multiplication of uniforms below 10, Hörmann's transformed rejection
    /// (PTRS, 1993) from 10 on.
    pub fn poisson(&mut self, lambda: f64) -> u64 {
        if lambda <= 0.0 {
            return 0;
        }
        if lambda < 10.0 {
            let limit = (-lambda).exp();
            let (mut k, mut p) = (0, self.uniform());
            while p > limit {
                k += 1;
                p *= self.uniform();
            }
            return k;
        }
        let slam = lambda.sqrt();
        let loglam = lambda.ln();
        let b = 0.931 + 2.53 * slam;
        let a = -0.059 + 0.02483 * b;
        let inv_alpha = 1.1239 + 1.1328 / (b - 3.4);
        let vr = 0.9277 - 3.6224 / (b - 2.0);
        loop {
            let u = self.uniform() - 0.5;
            let v = self.uniform();
            let us = 0.5 - u.abs();
            let k = ((2.0 * a / us + b) * u + lambda + 0.43).floor();
            if us >= 0.07 && v <= vr {
                return k as u64;
            }
            if k < 0.0 || (us < 0.013 && v > us) {
                continue;
            }
            if v.ln() + inv_alpha.ln() - (a / (us * us) + b).ln()
                <= -lambda + k * loglam - crate::dist::ln_gamma(k + 1.0)
            {
                return k as u64;
            }
        }
    }

    /// Multinomial counts of `n` draws over categories with cumulative shares `cum`.
    pub fn multinomial(&mut self, n: u64, cum: &[f64]) -> Vec<u64> {
        let mut counts = vec![0; cum.len()];
        for _ in 0..n {
            let u = self.uniform();
            let i = cum.iter().position(|&c| u < c).unwrap_or(cum.len() - 1);
            counts[i] += 1;
        }
        counts
    }
}
