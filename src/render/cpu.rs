//! The CPU rasterizer of a [`Scene`]: the same shapes and rules as `shaders/render.wgsl`
//! (instances back to front, hard edges, a pixel is covered when its centre is), for machines
//! with no adapter at all. Small scenes only: it visits every pixel of every instance's quad.

use super::draw::shape;
use super::scene::{Instance, Scene};

/// Renders `scene` at `cell` pixels per cell (clamped to 1..=256) into `(width, height, RGBA)`
/// on a white background, like the GPU renderer's offscreen target.
pub fn render(scene: &Scene, cell: u32) -> (u32, u32, Vec<u8>) {
    let cell = cell.clamp(1, 256);
    let (w, h) = (scene.width.max(1) * cell, scene.height.max(1) * cell);
    let mut rgba = vec![255u8; w as usize * h as usize * 4];
    for inst in &scene.instances {
        draw(inst, cell as f32, w, h, &mut rgba);
    }
    (w, h, rgba)
}

/// Paints one instance over the pixels whose centres it covers.
fn draw(inst: &Instance, cell: f32, w: u32, h: u32, rgba: &mut [u8]) {
    let [cx, cy] = inst.center;
    let [hx, hy] = inst.half;
    if !(hx > 0.0 && hy > 0.0) {
        return;
    }
    let color = inst
        .color
        .map(|c| (c.clamp(0.0, 1.0) * 255.0).round() as u8);
    // The pixel range whose centres can lie in the quad.
    let lo = |c: f32| ((c * cell - 0.5).ceil().max(0.0)) as u32;
    let hi =
        |c: f32, max: u32| ((c * cell - 0.5).floor().max(-1.0) as i64 + 1).min(max as i64) as u32;
    let (x0, x1) = (lo(cx - hx), hi(cx + hx, w));
    let (y0, y1) = (lo(cy - hy), hi(cy + hy, h));
    let (s, co) = inst.angle.sin_cos();
    for py in y0..y1 {
        let ly = ((py as f32 + 0.5) / cell - cy) / hy;
        for px in x0..x1 {
            let lx = ((px as f32 + 0.5) / cell - cx) / hx;
            if covers(inst.shape, lx, ly, s, co) {
                let i = (py as usize * w as usize + px as usize) * 4;
                rgba[i..i + 4].copy_from_slice(&color);
            }
        }
    }
}

/// Whether local point `(x, y)` in the quad's `[-1, 1]` square is inside the shape (the
/// fragment shader's discard rules).
fn covers(kind: u32, x: f32, y: f32, sin: f32, cos: f32) -> bool {
    if x.abs() > 1.0 || y.abs() > 1.0 {
        return false;
    }
    let r = (x * x + y * y).sqrt();
    match kind {
        shape::DISC => r <= 1.0,
        shape::TRIANGLE => {
            let (qx, qy) = (cos * x + sin * y, -sin * x + cos * y);
            qy <= 1.0 && qx.abs() <= (qy + 1.0) * 0.5
        }
        shape::RING => (0.82..=1.0).contains(&r),
        shape::DIAMOND => x.abs() + y.abs() <= 1.0,
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::draw::{rgb, square};

    fn scene(instances: Vec<Instance>) -> Scene {
        Scene {
            width: 2,
            height: 1,
            instances,
        }
    }

    fn pixel(img: &(u32, u32, Vec<u8>), x: u32, y: u32) -> [u8; 3] {
        let i = ((y * img.0 + x) * 4) as usize;
        [img.2[i], img.2[i + 1], img.2[i + 2]]
    }

    #[test]
    fn shapes_cover_their_centres_and_leave_the_corners() {
        let red = rgb([200, 10, 10]);
        for (k, kind) in [shape::RECT, shape::DISC, shape::RING, shape::DIAMOND]
            .into_iter()
            .enumerate()
        {
            let img = render(&scene(vec![square(1.0, 0.0, 0.5, red, kind, 0.0)]), 20);
            assert_eq!((img.0, img.1), (40, 20));
            assert_eq!(pixel(&img, 5, 10), [255, 255, 255], "cell 0 untouched");
            let corner = pixel(&img, 20, 0);
            let centre = pixel(&img, 30, 10);
            match kind {
                shape::RECT => assert_eq!((corner, centre), ([200, 10, 10], [200, 10, 10])),
                shape::RING => assert_eq!((corner, centre), ([255; 3], [255; 3]), "shape {k}"),
                _ => assert_eq!((corner, centre), ([255; 3], [200, 10, 10]), "shape {k}"),
            }
        }
    }

    #[test]
    fn later_instances_paint_over_earlier_ones_and_off_canvas_parts_are_clipped() {
        let img = render(
            &scene(vec![
                square(0.0, 0.0, 0.5, rgb([0, 0, 0]), shape::RECT, 0.0),
                square(0.0, 0.0, 0.3, rgb([0, 255, 0]), shape::DISC, 0.0),
                square(1.8, -0.6, 0.5, rgb([0, 0, 255]), shape::RECT, 0.0),
            ]),
            10,
        );
        assert_eq!(pixel(&img, 5, 5), [0, 255, 0]);
        assert_eq!(pixel(&img, 0, 0), [0, 0, 0]);
        assert_eq!(
            pixel(&img, 19, 0),
            [0, 0, 255],
            "the clipped square's visible part"
        );
        assert_eq!(pixel(&img, 19, 9), [255, 255, 255]);
    }

    #[test]
    fn a_triangle_points_along_its_angle() {
        let up = Instance {
            center: [0.5, 0.5],
            half: [0.5, 0.5],
            color: rgb([0, 0, 0]),
            shape: shape::TRIANGLE,
            angle: 0.0,
            _pad: [0.0; 2],
        };
        let img = render(&scene(vec![up]), 20);
        assert_eq!(pixel(&img, 10, 1), [0, 0, 0], "tip at the top");
        assert_eq!(pixel(&img, 1, 1), [255; 3]);
        assert_eq!(pixel(&img, 1, 19), [0, 0, 0], "base at the bottom");
        let right = Instance {
            angle: std::f32::consts::FRAC_PI_2,
            ..up
        };
        let img = render(&scene(vec![right]), 20);
        assert_eq!(pixel(&img, 18, 10), [0, 0, 0], "tip at the right");
        assert_eq!(pixel(&img, 18, 1), [255; 3]);
    }
}
