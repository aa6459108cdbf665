import {
  assertNestingDepth,
  LiquidSandbox,
  RENDER_LIMITS,
  TemplateRenderError,
} from './liquid-sandbox';

describe('HTML nesting depth', () => {
  it('refuses elements nested deeper than the limit, and only those', () => {
    expect(() => assertNestingDepth('<div>'.repeat(1000), 1000)).not.toThrow();
    expect(() => assertNestingDepth('<div>'.repeat(1001), 1000)).toThrow(
      'the HTML is nested deeper than 1000 elements',
    );
  });

  it('does not count void, self-closed, closed or implicitly closed elements as nesting', () => {
    const sloppy =
      '<p>para <b>b</b> <br> <img src="x"> <span/>'.repeat(3000) +
      '<table>' +
      '<tr><td>x<td>y'.repeat(3000) +
      '</table><ul>' +
      '<li>a'.repeat(3000) +
      '</ul><dl>' +
      '<dt>a<dd>b'.repeat(3000) +
      '</dl>' +
      '</nope>'.repeat(3000);
    expect(() => assertNestingDepth(sloppy, 10)).not.toThrow();
  });

  it('fails a render of deeply nested HTML with a render error on the body, before converting it', async () => {
    const deep = '<ul><li>'.repeat(40_000) + 'x' + '</li></ul>'.repeat(40_000);
    const error: unknown = await new LiquidSandbox()
      .render({ subject: 's', body: deep }, {})
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TemplateRenderError);
    expect(error).toMatchObject({
      part: 'body',
      message: `the HTML is nested deeper than ${RENDER_LIMITS.htmlDepth} elements`,
    });
  });
});
