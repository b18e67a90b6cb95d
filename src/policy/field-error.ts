/** One problem with a policy field: `field` is its path (e.g. "windows.cron[0].schedule"). */
export interface FieldError {
  field: string;
  message: string;
}
