/**
 * The condition language's public surface. Features use ConditionsService
 * (validate / assertValid / compile / matchesContact / count); the pure
 * functions are exported for unit tests and benchmarks.
 */
export { ConditionsModule } from './conditions.module';
export { ConditionsService } from './conditions.service';
export type { CompileServiceOptions, ValidateOptions } from './conditions.service';
export { compileCondition, wholeProjectSettings } from './condition-compiler';
export type { CompiledCondition, CompileOptions } from './condition-compiler';
export { validateConditionShape, parseIsoDate } from './condition-validator';
export type { ConditionGroup, ConditionNode, ConditionRule } from './condition.types';
