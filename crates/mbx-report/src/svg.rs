//! A small line-chart renderer producing inline SVG (no scripts, no external resources), for
//! time series in the HTML report. Text is escaped by maud.

use maud::{html, Markup};

/// One line of a chart.
#[derive(Debug, Clone)]
pub struct Series {
    /// Legend label.
    pub name: String,
    /// (x, y) points, x increasing.
    pub points: Vec<(f64, f64)>,
}

/// A chart: title, axis labels and series.
#[derive(Debug, Clone)]
pub struct LineChart {
    /// Title above the plot.
    pub title: String,
    /// X axis label.
    pub x_label: String,
    /// Y axis label.
    pub y_label: String,
    /// Lines.
    pub series: Vec<Series>,
}

const W: f64 = 640.0;
const H: f64 = 260.0;
const LEFT: f64 = 60.0;
const RIGHT: f64 = 150.0;
const TOP: f64 = 28.0;
const BOTTOM: f64 = 40.0;
/// Colour-blind-friendly palette (Okabe-Ito).
const COLORS: [&str; 8] = [
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000",
];

/// A "nice" step for about `n` ticks over `span` (1, 2 or 5 times a power of ten).
pub fn nice_step(span: f64, n: f64) -> f64 {
    if !(span.is_finite() && span > 0.0) {
        return 1.0;
    }
    let raw = span / n.max(1.0);
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let nice = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * mag
}

fn fmt_tick(v: f64) -> String {
    if v.abs() >= 100.0 || v == v.trunc() {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

impl LineChart {
    /// Renders the chart as an `<svg>` element.
    pub fn render(&self) -> Markup {
        let pts = self.series.iter().flat_map(|s| s.points.iter());
        let (mut x0, mut x1, mut y1) = (f64::INFINITY, f64::NEG_INFINITY, 0f64);
        for &(x, y) in pts {
            if x.is_finite() && y.is_finite() {
                x0 = x0.min(x);
                x1 = x1.max(x);
                y1 = y1.max(y);
            }
        }
        if !x0.is_finite() {
            (x0, x1) = (0.0, 1.0);
        }
        if x1 <= x0 {
            x1 = x0 + 1.0;
        }
        let ystep = nice_step(if y1 > 0.0 { y1 } else { 1.0 }, 4.0);
        let ymax = ((y1 / ystep).ceil() * ystep).max(ystep);
        let pw = W - LEFT - RIGHT;
        let ph = H - TOP - BOTTOM;
        let sx = |x: f64| LEFT + (x - x0) / (x1 - x0) * pw;
        let sy = |y: f64| TOP + ph - (y / ymax) * ph;
        let yticks: Vec<f64> = (0..=((ymax / ystep).round() as usize))
            .map(|i| i as f64 * ystep)
            .collect();
        let xstep = nice_step(x1 - x0, 5.0);
        let xticks: Vec<f64> = {
            let mut v = Vec::new();
            let mut t = (x0 / xstep).ceil() * xstep;
            while t <= x1 + 1e-9 && v.len() < 20 {
                v.push(t);
                t += xstep;
            }
            v
        };
        html! {
            svg xmlns="http://www.w3.org/2000/svg" viewBox=(format!("0 0 {W} {H}")) width=(W) height=(H) role="img" aria-label=(self.title) class="chart" {
                title { (self.title) }
                text x=(LEFT) y="16" font-size="13" font-weight="bold" { (self.title) }
                @for t in &yticks {
                    line x1=(LEFT) x2=(LEFT + pw) y1=(sy(*t)) y2=(sy(*t)) stroke="#ddd" stroke-width="1" {}
                    text x=(LEFT - 6.0) y=(sy(*t) + 4.0) font-size="10" text-anchor="end" { (fmt_tick(*t)) }
                }
                @for t in &xticks {
                    text x=(sx(*t)) y=(TOP + ph + 14.0) font-size="10" text-anchor="middle" { (fmt_tick(*t)) }
                }
                line x1=(LEFT) x2=(LEFT) y1=(TOP) y2=(TOP + ph) stroke="#444" stroke-width="1" {}
                line x1=(LEFT) x2=(LEFT + pw) y1=(TOP + ph) y2=(TOP + ph) stroke="#444" stroke-width="1" {}
                text x=(LEFT + pw / 2.0) y=(H - 6.0) font-size="11" text-anchor="middle" { (self.x_label) }
                text x="14" y=(TOP + ph / 2.0) font-size="11" text-anchor="middle" transform=(format!("rotate(-90 14 {})", TOP + ph / 2.0)) { (self.y_label) }
                @for (i, s) in self.series.iter().enumerate() {
                    @let color = COLORS[i % COLORS.len()];
                    @let points = s.points.iter().filter(|(x, y)| x.is_finite() && y.is_finite()).map(|&(x, y)| format!("{:.1},{:.1}", sx(x), sy(y))).collect::<Vec<_>>().join(" ");
                    polyline class="series" points=(points) fill="none" stroke=(color) stroke-width="1.5" {}
                    rect x=(LEFT + pw + 12.0) y=(TOP + 4.0 + i as f64 * 16.0) width="10" height="10" fill=(color) {}
                    text x=(LEFT + pw + 26.0) y=(TOP + 13.0 + i as f64 * 16.0) font-size="11" { (s.name) }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_steps() {
        assert_eq!(nice_step(100.0, 4.0), 50.0);
        assert_eq!(nice_step(7.0, 4.0), 2.0);
        assert_eq!(nice_step(0.9, 4.0), 0.5);
        assert_eq!(nice_step(1200.0, 5.0), 500.0);
        assert_eq!(nice_step(0.0, 4.0), 1.0);
    }

    #[test]
    fn renders_one_polyline_per_series_inside_the_plot() {
        let c = LineChart {
            title: "IOPS <per> instance".into(),
            x_label: "seconds".into(),
            y_label: "IOPS".into(),
            series: vec![
                Series {
                    name: "Instance1.1".into(),
                    points: vec![(0.0, 10.0), (15.0, 20.0), (30.0, 15.0)],
                },
                Series {
                    name: "Instance1.2 & co".into(),
                    points: vec![(0.0, 5.0), (15.0, f64::NAN), (30.0, 25.0)],
                },
            ],
        };
        let svg = c.render().into_string();
        assert_eq!(svg.matches("<polyline").count(), 2);
        // Text is escaped, so the SVG stays well-formed.
        assert!(svg.contains("IOPS &lt;per&gt; instance"), "{svg}");
        assert!(svg.contains("Instance1.2 &amp; co"), "{svg}");
        // Every point lies inside the plot area; NaN points are dropped.
        for poly in svg.split("points=\"").skip(1) {
            let pts = &poly[..poly.find('"').unwrap_or(0)];
            for p in pts.split_whitespace() {
                let (x, y) = p.split_once(',').expect("x,y");
                let (x, y): (f64, f64) = (x.parse().expect("x"), y.parse().expect("y"));
                assert!(
                    (LEFT..=W - RIGHT).contains(&x) && (TOP..=H - BOTTOM).contains(&y),
                    "{p}"
                );
            }
        }
        assert!(!svg.contains("NaN"));
        // The y axis reaches a nice maximum at or above the data (25 -> 30).
        assert!(svg.contains(">30<"), "{svg}");
    }

    #[test]
    fn empty_chart_still_renders() {
        let c = LineChart {
            title: "empty".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            series: vec![],
        };
        let svg = c.render().into_string();
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
    }
}
